//! An SVG element tree and its text (pure). The charts are built as a [`Node`] tree: the
//! static report writes it as markup ([`Node::to_svg`]), the dashboard's page builds the
//! same elements from its JSON with `createElementNS`/`setAttribute`/`textContent`, never
//! by parsing markup. Element and attribute names are the product's own (`&'static str`);
//! every value and text, which may come from a report, is escaped when written.

use serde::Serialize;

/// One SVG element: its name, attributes in order, children, and its text (for `text`
/// and `title` elements).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Node {
    /// Element name (`svg`, `g`, `rect`, `circle`, `polyline`, `line`, `text`, `title`).
    pub tag: &'static str,
    /// `[name, value]` pairs, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attrs: Vec<(&'static str, String)>,
    /// Child elements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
    /// Text content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Node {
    /// An element without attributes.
    pub fn new(tag: &'static str) -> Node {
        Node {
            tag,
            ..Node::default()
        }
    }

    /// This element with one more attribute.
    pub fn attr(mut self, name: &'static str, value: impl Into<String>) -> Node {
        self.attrs.push((name, value.into()));
        self
    }

    /// This element with one more child.
    pub fn child(mut self, c: Node) -> Node {
        self.children.push(c);
        self
    }

    /// This element with more children.
    pub fn children(mut self, cs: impl IntoIterator<Item = Node>) -> Node {
        self.children.extend(cs);
        self
    }

    /// This element with its text.
    pub fn text(mut self, t: impl Into<String>) -> Node {
        self.text = Some(t.into());
        self
    }

    /// A `<title>` child (the tooltip a browser shows over the element).
    pub fn title(self, t: impl Into<String>) -> Node {
        self.child(Node::new("title").text(t))
    }

    /// The value of attribute `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every element of the tree (this one first), depth first.
    pub fn walk(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }

    /// The element as markup, every value and text escaped ([`escape`]).
    pub fn to_svg(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        out.push('<');
        out.push_str(self.tag);
        for (n, v) in &self.attrs {
            out.push(' ');
            out.push_str(n);
            out.push_str("=\"");
            out.push_str(&escape(v));
            out.push('"');
        }
        if self.children.is_empty() && self.text.is_none() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        if let Some(t) = &self.text {
            out.push_str(&escape(t));
        }
        for c in &self.children {
            c.write(out);
        }
        out.push_str("</");
        out.push_str(self.tag);
        out.push('>');
    }
}

/// Text safe as an attribute value or element text in HTML and XML: `&`, `<`, `>`, `"`
/// and `'` as references; control characters other than tab and newline left out.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Text from a report as a chart shows it: control characters removed, at most `max`
/// characters (escaped when written, [`escape`]).
pub fn bounded(s: &str, max: usize) -> String {
    s.chars().filter(|c| !c.is_control()).take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_texts_are_escaped_and_names_are_the_products() {
        let n = Node::new("g")
            .attr("data-job", "a<b>&\"c'd")
            .child(Node::new("text").text("</svg><script>alert(1)</script>"))
            .child(Node::new("rect").attr("x", "1"));
        let s = n.to_svg();
        assert_eq!(
            s,
            "<g data-job=\"a&lt;b&gt;&amp;&quot;c&#39;d\"><text>&lt;/svg&gt;&lt;script&gt;\
             alert(1)&lt;/script&gt;</text><rect x=\"1\"/></g>"
        );
        assert_eq!(escape("a\u{0}b\u{1b}[31m\nc"), "ab[31m\nc");
    }

    #[test]
    fn the_tree_serializes_as_the_page_builds_it() {
        let n = Node::new("circle").attr("cx", "3").title("p50 · 3 ms");
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            serde_json::json!({"tag": "circle", "attrs": [["cx", "3"]],
                "children": [{"tag": "title", "text": "p50 · 3 ms"}]})
        );
        assert_eq!(n.get("cx"), Some("3"));
        assert_eq!(n.walk().len(), 2);
    }
}
