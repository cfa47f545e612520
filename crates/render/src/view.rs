//! The endpoint label every renderer shows; the renderers read the report model
//! ([`inferscope_model::JobReport`], [`inferscope_model::SummaryReport`]) directly.

/// Where the requests went: the built-in simulator or a URL (every output says which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointLabel {
    /// The in-process simulator (no endpoint in the suite).
    Simulated,
    /// A real endpoint's base URL.
    Url(String),
}

impl EndpointLabel {
    /// `simulated (built-in)` or the URL with any `user:password@` replaced by `***@`.
    pub fn display(&self) -> String {
        match self {
            EndpointLabel::Simulated => "simulated (built-in)".to_string(),
            EndpointLabel::Url(u) => redact_userinfo(u),
        }
    }

    /// Whether the endpoint was the simulator.
    pub fn is_simulated(&self) -> bool {
        matches!(self, EndpointLabel::Simulated)
    }
}

fn redact_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..auth_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_label_redacts_credentials() {
        assert_eq!(EndpointLabel::Simulated.display(), "simulated (built-in)");
        assert_eq!(
            EndpointLabel::Url("http://u:secret@host:8000/v1?a=b@c".into()).display(),
            "http://***@host:8000/v1?a=b@c"
        );
        assert_eq!(
            EndpointLabel::Url("http://127.0.0.1:8000/v1".into()).display(),
            "http://127.0.0.1:8000/v1"
        );
    }
}
