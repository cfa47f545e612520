//! The page packaged in the binary: plain HTML, CSS and JavaScript, no
//! framework, nothing fetched from another origin.

/// `GET /`.
pub const INDEX_HTML: &str = include_str!("assets/index.html");
/// `GET /app.js`.
pub const APP_JS: &str = include_str!("assets/app.js");
/// `GET /style.css`.
pub const STYLE_CSS: &str = include_str!("assets/style.css");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_reference_nothing_outside_and_can_be_inlined() {
        // The SVG namespace name is an identifier, not a fetch.
        let js = APP_JS.replace("\"http://www.w3.org/2000/svg\"", "SVG_NS");
        for (name, text) in [
            ("index.html", INDEX_HTML),
            ("app.js", js.as_str()),
            ("style.css", STYLE_CSS),
        ] {
            for bad in [
                "http://",
                "https://",
                "//cdn",
                "@import",
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "new Function",
            ] {
                assert!(!text.contains(bad), "{name} contains {bad}");
            }
        }
        // Inlined into one file by `report --format html`: no closing tag inside.
        assert!(!APP_JS.to_ascii_lowercase().contains("</script"));
        assert!(!APP_JS.contains("<!--"));
        assert!(!STYLE_CSS.to_ascii_lowercase().contains("</style"));
        // No inline script or style attribute in the shell (the CSP forbids them).
        assert!(!INDEX_HTML.contains("style=\""));
        assert!(!INDEX_HTML.contains("onclick"));
    }
}
