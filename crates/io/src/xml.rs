//! The little XML the VTK writers need: escaping of attribute values.

use std::borrow::Cow;

/// `s` with the five XML special characters replaced by entities, so that it can sit
/// inside a double-quoted attribute value (array names and file names are user input).
pub(crate) fn escape_attr(s: &str) -> Cow<'_, str> {
    if !s.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_special_characters_only() {
        assert!(matches!(escape_attr("velocity_x"), Cow::Borrowed(_)));
        assert_eq!(
            escape_attr(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
    }
}
