//! What the section parsers collect: nodes with their tags, elements with resolved node
//! indices and a reference to where their physical tags come from, and the tag-to-index
//! map for nodes.

use std::collections::HashMap;

use super::reader::Reader;
use super::types::ElementType;
use crate::MeshError;

/// Marks an unused slot of a dense tag index.
const NONE: u32 = u32::MAX;

/// Tags below this stay in a dense array (plus four slots per node seen). Small, so that
/// a few nodes with large tags cannot make the array much larger than the input: the
/// array holds at most `4 * (DENSE_BASE + 4 * nodes)` bytes.
const DENSE_BASE: u64 = 1 << 10;

/// Node tag -> node index: a dense array while tags are small compared with the number of
/// nodes (the usual case: 1..n), a hash map once a tag is far beyond that.
pub(crate) enum TagIndex {
    Dense(Vec<u32>),
    Sparse(HashMap<u64, u32>),
}

impl TagIndex {
    /// Records `tag -> index`; false if the tag was already present.
    fn insert(&mut self, tag: u64, index: u32) -> bool {
        if let TagIndex::Dense(v) = self {
            if tag < DENSE_BASE + 4 * index as u64 {
                let t = tag as usize;
                if t >= v.len() {
                    v.resize(t + 1, NONE);
                }
                if v[t] != NONE {
                    return false;
                }
                v[t] = index;
                return true;
            }
            let map = v
                .iter()
                .enumerate()
                .filter(|&(_, &i)| i != NONE)
                .map(|(t, &i)| (t as u64, i))
                .collect();
            *self = TagIndex::Sparse(map);
        }
        match self {
            TagIndex::Sparse(m) => match m.entry(tag) {
                std::collections::hash_map::Entry::Occupied(_) => false,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(index);
                    true
                }
            },
            TagIndex::Dense(_) => unreachable!("converted above"),
        }
    }

    /// The index of the node with this tag.
    fn get(&self, tag: u64) -> Option<u32> {
        match self {
            TagIndex::Dense(v) => usize::try_from(tag)
                .ok()
                .and_then(|t| v.get(t))
                .copied()
                .filter(|&i| i != NONE),
            TagIndex::Sparse(m) => m.get(&tag).copied(),
        }
    }
}

/// All nodes of the file, in file order.
pub(crate) struct NodeTable {
    /// Gmsh node tags.
    pub tags: Vec<u64>,
    /// x, y, z per node.
    pub coords: Vec<[f64; 3]>,
    index: TagIndex,
}

impl NodeTable {
    /// An empty table with room for `capacity` nodes.
    pub fn with_capacity(capacity: usize) -> NodeTable {
        NodeTable {
            tags: Vec::with_capacity(capacity),
            coords: Vec::with_capacity(capacity),
            index: TagIndex::Dense(Vec::new()),
        }
    }

    /// Adds a node whose tag was read at byte offset `tag_at` and coordinates at `x_at`,
    /// rejecting repeated tags and non-finite coordinates.
    pub fn push(
        &mut self,
        r: &Reader,
        tag_at: usize,
        x_at: usize,
        tag: u64,
        x: [f64; 3],
    ) -> Result<(), MeshError> {
        let index = u32::try_from(self.tags.len())
            .ok()
            .filter(|&i| i != NONE)
            .ok_or(MeshError::TooLarge {
                what: "nodes",
                count: self.tags.len(),
            })?;
        if x.iter().any(|c| !c.is_finite()) {
            return Err(r.error(
                x_at,
                format!("node {tag} has a non-finite coordinate {x:?}"),
            ));
        }
        if !self.index.insert(tag, index) {
            return Err(r.error(tag_at, format!("node tag {tag} is defined twice")));
        }
        self.tags.push(tag);
        self.coords.push(x);
        Ok(())
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    /// Index of the node with Gmsh tag `tag`; an error at `at` naming the tag if there is
    /// none.
    pub fn resolve(&self, r: &Reader, at: usize, tag: u64, element: u64) -> Result<u32, MeshError> {
        self.index.get(tag).ok_or_else(|| {
            r.error(
                at,
                format!("element {element} refers to node {tag}, which $Nodes does not define"),
            )
        })
    }
}

/// Where the physical tags of a group of elements come from.
pub(crate) enum PhysSource {
    /// MSH 2: the first element tag (0: none).
    Tag(i32),
    /// MSH 4: the physical tags of entity `(dim, tag)` in `$Entities`; `at` locates the
    /// element block header.
    Entity { dim: u8, tag: i32, at: usize },
}

/// Elements of dimension 1 to 3, in file order, with node tags resolved to node indices.
#[derive(Default)]
pub(crate) struct ElementTable {
    /// Gmsh element type per element.
    pub types: Vec<&'static ElementType>,
    /// Gmsh element tag per element.
    pub tags: Vec<u64>,
    /// Index into `groups` per element.
    pub group: Vec<u32>,
    /// Byte offset of each element's record, for error messages.
    pub at: Vec<usize>,
    /// Start of each element's nodes in `nodes` (one more entry than elements).
    pub node_start: Vec<usize>,
    /// Node indices of all elements, concatenated.
    pub nodes: Vec<u32>,
    /// Sources of physical tags.
    pub groups: Vec<PhysSource>,
    /// MSH 2 physical tag -> group index.
    tag_groups: HashMap<i32, u32>,
    /// MSH 4 entity `(dim, tag)` -> group index.
    entity_groups: HashMap<(u8, i32), u32>,
    /// Element records in the file per Gmsh type (points included).
    pub type_counts: std::collections::BTreeMap<u32, usize>,
    /// Element records in the file.
    pub records: usize,
}

impl ElementTable {
    /// An empty table with room for about `capacity` elements.
    pub fn with_capacity(capacity: usize) -> ElementTable {
        ElementTable {
            types: Vec::with_capacity(capacity),
            tags: Vec::with_capacity(capacity),
            group: Vec::with_capacity(capacity),
            at: Vec::with_capacity(capacity),
            node_start: vec![0],
            ..ElementTable::default()
        }
    }

    /// The group of MSH 2 elements with physical tag `tag`.
    pub fn group_for_tag(&mut self, tag: i32) -> u32 {
        let groups = &mut self.groups;
        *self.tag_groups.entry(tag).or_insert_with(|| {
            groups.push(PhysSource::Tag(tag));
            (groups.len() - 1) as u32
        })
    }

    /// The group of MSH 4 elements of entity `(dim, tag)`, whose first element block is
    /// at `at`. Blocks of one entity share a group, so that the entity's physical tags
    /// are looked up (and copied) once however many blocks it has.
    pub fn group_for_entity(&mut self, dim: u8, tag: i32, at: usize) -> u32 {
        let groups = &mut self.groups;
        *self.entity_groups.entry((dim, tag)).or_insert_with(|| {
            groups.push(PhysSource::Entity { dim, tag, at });
            (groups.len() - 1) as u32
        })
    }

    /// Counts an element record of type `ty` and, unless it is a point, starts storing it;
    /// its nodes follow through [`ElementTable::push_node`]. Returns whether it is stored.
    pub fn begin(&mut self, ty: &'static ElementType, tag: u64, group: u32, at: usize) -> bool {
        self.records += 1;
        *self.type_counts.entry(ty.number).or_insert(0) += 1;
        if ty.dim == 0 {
            return false;
        }
        self.types.push(ty);
        self.tags.push(tag);
        self.group.push(group);
        self.at.push(at);
        true
    }

    /// Adds a node to the element begun last.
    pub fn push_node(&mut self, node: u32) {
        self.nodes.push(node);
    }

    /// Closes the element begun last.
    pub fn end(&mut self) {
        self.node_start.push(self.nodes.len());
    }

    /// Number of stored elements.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Node indices of stored element `e`.
    pub fn nodes_of(&self, e: usize) -> &[u32] {
        &self.nodes[self.node_start[e]..self.node_start[e + 1]]
    }
}

/// A capacity for `count` items announced by the file, each taking at least
/// `min_item_bytes` of the `remaining` input: never more than the input could hold.
pub(crate) fn capped(count: u64, remaining: usize, min_item_bytes: usize) -> usize {
    let most = remaining / min_item_bytes.max(1) + 1;
    usize::try_from(count).map_or(most, |c| c.min(most))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_index_switches_to_a_map_for_far_tags() {
        let mut ix = TagIndex::Dense(Vec::new());
        assert!(ix.insert(3, 0));
        assert!(ix.insert(1, 1));
        assert!(!ix.insert(3, 2));
        assert!(matches!(ix, TagIndex::Dense(_)));
        assert!(ix.insert(1 << 40, 2));
        assert!(matches!(ix, TagIndex::Sparse(_)));
        assert_eq!(ix.get(3), Some(0));
        assert_eq!(ix.get(1), Some(1));
        assert_eq!(ix.get(1 << 40), Some(2));
        assert_eq!(ix.get(2), None);
        assert!(!ix.insert(1, 5));
    }

    #[test]
    fn capacity_is_bounded_by_the_input() {
        assert_eq!(capped(10, 1000, 8), 10);
        assert_eq!(capped(1_000_000_000_000_000, 1000, 8), 126);
        assert_eq!(capped(u64::MAX, 0, 0), 1);
    }
}
