//! The summary tree's arithmetic: pure functions over node coordinates.
//!
//! Node (l, i) covers messages [i·2^l, (i+1)·2^l) and is named `id+n` with
//! id = i·2^l and n = 2^l. Its children are (l−1, 2i) and (l−1, 2i+1); its
//! parent is (l+1, ⌊i/2⌋); its sibling is (l, i xor 1).

use std::fmt;

/// A node of the summary tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub level: u8,
    pub index: u64,
}

impl Node {
    pub const fn new(level: u8, index: u64) -> Node {
        Node { level, index }
    }

    /// The level-0 node of message `id`.
    pub const fn message(id: u64) -> Node {
        Node::new(0, id)
    }

    /// How many messages it covers: 2^l.
    pub const fn span(self) -> u64 {
        1 << self.level
    }

    /// Its first message.
    pub const fn first(self) -> u64 {
        self.index << self.level
    }

    /// Its last message.
    pub const fn last(self) -> u64 {
        self.first() + self.span() - 1
    }

    /// One past its last message.
    pub const fn end(self) -> u64 {
        self.first() + self.span()
    }

    pub const fn parent(self) -> Node {
        Node::new(self.level + 1, self.index / 2)
    }

    pub const fn sibling(self) -> Node {
        Node::new(self.level, self.index ^ 1)
    }

    /// Its two children, left first; none for a message.
    pub fn children(self) -> Option<(Node, Node)> {
        (self.level > 0).then(|| {
            (
                Node::new(self.level - 1, self.index * 2),
                Node::new(self.level - 1, self.index * 2 + 1),
            )
        })
    }

    /// Whether it is the left child of its parent.
    pub const fn is_left(self) -> bool {
        self.index.is_multiple_of(2)
    }

    pub const fn covers(self, id: u64) -> bool {
        self.first() <= id && id <= self.last()
    }

    /// The node named `id+n`, when that is a valid name: n a power of two,
    /// id a multiple of n.
    pub fn named(id: u64, n: u64) -> Option<Node> {
        if n == 0 || !n.is_power_of_two() || !id.is_multiple_of(n) {
            return None;
        }
        Some(Node::new(n.trailing_zeros() as u8, id / n))
    }
}

impl fmt::Display for Node {
    /// `id+n`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.first(), self.span())
    }
}

/// A message's own line: `kind: text`, newlines as spaces.
pub fn message_line(kind: &str, text: &str) -> String {
    one_line(&format!("{kind}: {text}"))
}

/// Newlines (and carriage returns) as spaces: a line is one line.
pub fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// The parent line made of two sibling lines at no cost, when it fits.
pub fn free_join(left: &str, right: &str, line_budget: usize) -> Option<String> {
    let joined = format!("{left}\n{right}");
    (joined.len() <= line_budget).then_some(joined)
}

/// Cuts `text` to at most `limit` bytes at the last word that fits (or a
/// character boundary when a single word is longer).
pub fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    if text[end..].starts_with(' ') {
        return head.trim_end().to_string();
    }
    match head.rfind(' ') {
        Some(space) if space > limit / 2 => head[..space].trim_end().to_string(),
        _ => head.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates() {
        let node = Node::new(3, 2);
        assert_eq!(node.to_string(), "16+8");
        assert_eq!((node.first(), node.last(), node.end()), (16, 23, 24));
        assert_eq!(node.parent(), Node::new(4, 1));
        assert_eq!(node.sibling(), Node::new(3, 3));
        assert_eq!(node.children(), Some((Node::new(2, 4), Node::new(2, 5))));
        assert!(Node::message(5).children().is_none());
        assert!(node.covers(16) && node.covers(23) && !node.covers(24));
    }

    #[test]
    fn names_must_be_powers_of_two_at_multiples() {
        assert_eq!(Node::named(16, 8), Some(Node::new(3, 2)));
        assert_eq!(Node::named(12, 1), Some(Node::message(12)));
        assert_eq!(Node::named(12, 8), None);
        assert_eq!(Node::named(12, 3), None);
        assert_eq!(Node::named(0, 0), None);
    }

    #[test]
    fn free_join_only_when_it_fits() {
        assert_eq!(free_join("ab", "cd", 5).as_deref(), Some("ab\ncd"));
        assert_eq!(free_join("ab", "cd", 4), None);
    }

    #[test]
    fn cut_stops_at_a_word_and_a_char_boundary() {
        assert_eq!(cut("hello brave new world", 15), "hello brave new");
        assert_eq!(cut("ééééé", 5), "éé");
        assert_eq!(cut("short", 10), "short");
    }
}
