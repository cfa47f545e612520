//! What every chat request of a job asks for beyond its messages: a fixed output
//! length (`output_tokens`) and the suite's `extra_body` members. Pure: it edits a
//! [`ChatRequest`] before it is sent.
//!
//! A fixed output length is `max_tokens = N` plus the engines' own switches, checked
//! against their sources rather than assumed: `ignore_eos = true` (vLLM, SGLang and
//! llama.cpp's llama-server read it; llama-server then bans every end-of-generation token)
//! and `min_tokens = N` (vLLM and SGLang read it; llama-server ignores it, the built-in
//! simulator too, which extends its answer under `ignore_eos`). The suite's `extra_body`
//! members are written last, so a suite can override either switch (or drop it with
//! another value) for an engine that refuses it.

use serde_json::{Map, Value};

use crate::client::ChatRequest;

/// The request-level settings a job adds to each of its chat requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestShape {
    /// `output_tokens`: every request decodes exactly this many tokens per choice where
    /// the engine allows it.
    pub output_tokens: Option<u32>,
    /// The suite's `extra_body`: members added to every request body, last.
    pub extra_body: Map<String, Value>,
}

impl RequestShape {
    /// Applies the shape to `req`: `max_tokens`, the engine switches and the `extra_body`
    /// members, and the asked length the record is judged against.
    pub fn apply(&self, req: &mut ChatRequest) {
        if let Some(n) = self.output_tokens {
            req.max_tokens = Some(n);
            req.extra.insert("ignore_eos".into(), Value::Bool(true));
            req.extra.insert("min_tokens".into(), Value::from(n));
            req.output_tokens_asked = Some(n);
        }
        for (k, v) in &self.extra_body {
            req.extra.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_fixed_output_sets_max_tokens_and_both_engine_switches() {
        let shape = RequestShape {
            output_tokens: Some(64),
            extra_body: Map::new(),
        };
        let mut req = ChatRequest {
            max_tokens: Some(8),
            ..Default::default()
        };
        shape.apply(&mut req);
        let body = req.body_json();
        assert_eq!(body["max_tokens"], json!(64));
        assert_eq!(body["ignore_eos"], json!(true));
        assert_eq!(body["min_tokens"], json!(64));
        assert_eq!(req.output_tokens_asked, Some(64));
    }

    #[test]
    fn extra_body_members_come_last_and_override_the_switches() {
        let mut extra = Map::new();
        extra.insert("min_tokens".into(), json!(null));
        extra.insert("top_k".into(), json!(1));
        let shape = RequestShape {
            output_tokens: Some(16),
            extra_body: extra,
        };
        let mut req = ChatRequest::default();
        shape.apply(&mut req);
        let body = req.body_json();
        assert_eq!(body["top_k"], json!(1));
        assert_eq!(body["min_tokens"], json!(null));
        assert_eq!(body["ignore_eos"], json!(true));
    }

    #[test]
    fn no_shape_changes_nothing() {
        let mut req = ChatRequest {
            max_tokens: Some(8),
            ..Default::default()
        };
        let before = req.clone();
        RequestShape::default().apply(&mut req);
        assert_eq!(req, before);
    }
}
