//! Aggregate types: tuples, fixed-size arrays (`[T; N]`) and plain-data structs, kept in a table
//! that a checked program carries ([`Types`]), and their layout in memory, which is C's: fields
//! in declaration order, each at the next multiple of its alignment, the whole padded to a
//! multiple of the largest alignment. The code generator, the launch checks and the host's
//! derive all compute offsets with these rules.

use super::{ArrayTy, Scalar, Ty};

/// Index of an aggregate type in a [`Types`] table.
pub type AggId = u32;

/// The length of a fixed-size array whose length depends on a const parameter, in a generic
/// body checked at its definition (never in a compiled program).
pub const UNKNOWN_LEN: u64 = u64::MAX;

/// An aggregate type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum AggTy {
    /// `(A, B, ..)`: at least one element (`()` is [`Ty::Unit`]).
    Tuple(Vec<Ty>),
    /// `[T; N]`, a value held in registers or the thread's local memory.
    Array {
        /// Element type.
        elem: Ty,
        /// Number of elements ([`UNKNOWN_LEN`] only in a generic definition).
        len: u64,
    },
    /// A plain-data struct of the source.
    Struct(StructDef),
}

/// A plain-data struct: its name and its fields in declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct StructDef {
    /// Its name, qualified by its module outside the root (messages and launch checks only).
    pub name: String,
    /// Field names and types, in declaration order.
    pub fields: Vec<(String, Ty)>,
}

impl StructDef {
    /// The struct a `TensorMap<..>` type is, named `name` ([`tensor_map_type_name`]): one
    /// `u64` field, the unnameable [`TENSOR_MAP_FIELD`](super::TENSOR_MAP_FIELD) (the map's
    /// address on the GPU, the host's map on the host).
    ///
    /// [`tensor_map_type_name`]: super::tensor_map_type_name
    pub fn tensor_map(name: String) -> StructDef {
        StructDef { name, fields: vec![(super::TENSOR_MAP_FIELD.into(), Ty::Scalar(Scalar::U64))] }
    }

    /// Whether this is a `TensorMap<..>`: one field, the unnameable
    /// [`TENSOR_MAP_FIELD`](super::TENSOR_MAP_FIELD).
    pub fn is_tensor_map(&self) -> bool {
        matches!(self.fields.as_slice(), [(f, _)] if f == super::TENSOR_MAP_FIELD)
    }
}

/// The element type of an array in memory (a parameter, a captured array, a shared array): a
/// scalar, or a plain-data struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Elem {
    /// A scalar.
    Scalar(Scalar),
    /// A struct, by its id in the program's [`Types`].
    Struct(AggId),
}

impl Elem {
    /// The scalar, for an array of scalars.
    pub fn scalar(self) -> Option<Scalar> {
        match self {
            Elem::Scalar(s) => Some(s),
            Elem::Struct(_) => None,
        }
    }

    /// The type of one element's value.
    pub fn ty(self) -> Ty {
        match self {
            Elem::Scalar(s) => Ty::Scalar(s),
            Elem::Struct(id) => Ty::Agg(id),
        }
    }
}

impl std::fmt::Display for Elem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Elem::Scalar(s) => write!(f, "{s}"),
            // Messages name structs through the program's `Types`.
            Elem::Struct(id) => write!(f, "struct #{id}"),
        }
    }
}

impl From<Scalar> for Elem {
    fn from(s: Scalar) -> Elem {
        Elem::Scalar(s)
    }
}

/// The table of a program's aggregate types, by [`AggId`]. Tuples and arrays are interned by
/// structure (one id per type); each struct has the id it was entered with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct Types {
    aggs: Vec<AggTy>,
}

/// Size and alignment in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct SizeAlign {
    /// Bytes one value occupies, padding included (a multiple of `align`).
    pub size: u64,
    /// Alignment in bytes.
    pub align: u64,
}

impl Types {
    /// Whether `t` is a `TensorMap<..>` ([`StructDef::is_tensor_map`]).
    pub fn is_tensor_map(&self, t: Ty) -> bool {
        matches!(t, Ty::Agg(id) if matches!(self.get(id), Some(AggTy::Struct(d)) if d.is_tensor_map()))
    }

    /// The aggregate type `id`.
    pub fn get(&self, id: AggId) -> Option<&AggTy> {
        self.aggs.get(id as usize)
    }

    /// Every aggregate type, by id.
    pub fn all(&self) -> &[AggTy] {
        &self.aggs
    }

    /// Number of types.
    pub fn len(&self) -> usize {
        self.aggs.len()
    }

    /// No types.
    pub fn is_empty(&self) -> bool {
        self.aggs.is_empty()
    }

    /// The id of a tuple or array type, entered once.
    pub fn intern(&mut self, t: AggTy) -> AggId {
        if !matches!(t, AggTy::Struct(_))
            && let Some(i) = self.aggs.iter().position(|a| *a == t)
        {
            return i as AggId;
        }
        self.aggs.push(t);
        (self.aggs.len() - 1) as AggId
    }

    /// Enters a struct under a new id (its fields may be filled in later with
    /// [`set_fields`](Self::set_fields), so that a struct can be named before its fields are
    /// known).
    pub fn add_struct(&mut self, def: StructDef) -> AggId {
        self.aggs.push(AggTy::Struct(def));
        (self.aggs.len() - 1) as AggId
    }

    /// Sets the fields of struct `id`.
    pub fn set_fields(&mut self, id: AggId, fields: Vec<(String, Ty)>) {
        if let Some(AggTy::Struct(s)) = self.aggs.get_mut(id as usize) {
            s.fields = fields;
        }
    }

    /// The struct `id`, if it is one.
    pub fn strukt(&self, id: AggId) -> Option<&StructDef> {
        match self.get(id) {
            Some(AggTy::Struct(s)) => Some(s),
            _ => None,
        }
    }

    /// The types of the components of aggregate `id`: a tuple's elements, a struct's fields, or
    /// an array's element repeated (at most `limit` times).
    pub fn components(&self, id: AggId) -> Vec<Ty> {
        match self.get(id) {
            Some(AggTy::Tuple(t)) => t.clone(),
            Some(AggTy::Struct(s)) => s.fields.iter().map(|(_, t)| *t).collect(),
            Some(AggTy::Array { elem, len }) => vec![*elem; (*len).min(1 << 20) as usize],
            None => Vec::new(),
        }
    }

    /// The array type of `elem` in memory, for an element that is a scalar or a struct.
    pub fn elem_of(&self, t: Ty) -> Option<Elem> {
        match t {
            Ty::Scalar(s) => Some(Elem::Scalar(s)),
            Ty::Agg(id) if self.strukt(id).is_some() => Some(Elem::Struct(id)),
            _ => None,
        }
    }

    /// Size and alignment of a value of type `t` in memory (`bool` is one byte, an enum its
    /// discriminant, an array reference (which only a closure's value holds) its pointer,
    /// extents and strides); `None` for types that are not values in memory (`()`, `!`, type
    /// parameters) and for an array of [`UNKNOWN_LEN`].
    pub fn size_align(&self, t: Ty) -> Option<SizeAlign> {
        self.size_align_depth(t, 0)
    }

    fn size_align_depth(&self, t: Ty, depth: u32) -> Option<SizeAlign> {
        if depth > 256 {
            return None;
        }
        let scalar = |s: Scalar| SizeAlign { size: s.size() as u64, align: s.size() as u64 };
        match t {
            Ty::Scalar(s) => Some(scalar(s)),
            Ty::Enum(e) => Some(scalar(e.repr)),
            Ty::Agg(id) => match self.get(id)? {
                AggTy::Array { elem, len } => {
                    if *len == UNKNOWN_LEN {
                        return None;
                    }
                    let e = self.size_align_depth(*elem, depth + 1)?;
                    Some(SizeAlign { size: e.size.checked_mul(*len)?, align: e.align })
                }
                AggTy::Tuple(_) | AggTy::Struct(_) => {
                    let (offsets, sa) = self.layout_depth(id, depth)?;
                    let _ = offsets;
                    Some(sa)
                }
            },
            // An array reference held by a closure's value: its pointer, then its extents and
            // strides.
            Ty::Array(a) => Some(SizeAlign { size: 8 + 16 * a.ndim as u64, align: 8 }),
            Ty::Unit | Ty::Never | Ty::Param(_) | Ty::ParamArray(_) => None,
        }
    }

    /// The byte offset of each field of tuple or struct `id` and the size and alignment of the
    /// whole, by C's rules.
    pub fn layout(&self, id: AggId) -> Option<(Vec<u64>, SizeAlign)> {
        self.layout_depth(id, 0)
    }

    fn layout_depth(&self, id: AggId, depth: u32) -> Option<(Vec<u64>, SizeAlign)> {
        let fields: Vec<Ty> = match self.get(id)? {
            AggTy::Tuple(t) => t.clone(),
            AggTy::Struct(s) => s.fields.iter().map(|(_, t)| *t).collect(),
            AggTy::Array { .. } => return None,
        };
        let mut offsets = Vec::with_capacity(fields.len());
        let mut at = 0u64;
        let mut align = 1u64;
        for f in fields {
            let sa = self.size_align_depth(f, depth + 1)?;
            at = at.checked_next_multiple_of(sa.align)?;
            offsets.push(at);
            at = at.checked_add(sa.size)?;
            align = align.max(sa.align);
        }
        Some((offsets, SizeAlign { size: at.checked_next_multiple_of(align)?, align }))
    }

    /// The scalars a value of type `t` is made of, with their byte offsets, in memory order:
    /// how an aggregate kernel parameter is passed (one parameter per scalar).
    pub fn leaves(&self, t: Ty) -> Option<Vec<(u64, Scalar)>> {
        let mut out = Vec::new();
        self.leaves_into(t, 0, &mut out, 0)?;
        Some(out)
    }

    fn leaves_into(&self, t: Ty, base: u64, out: &mut Vec<(u64, Scalar)>, depth: u32) -> Option<()> {
        if depth > 256 || out.len() > 1 << 16 {
            return None;
        }
        match t {
            Ty::Scalar(s) => out.push((base, s)),
            Ty::Enum(e) => out.push((base, e.repr)),
            Ty::Agg(id) => match self.get(id)? {
                AggTy::Array { elem, len } => {
                    let e = self.size_align(*elem)?;
                    for i in 0..*len {
                        self.leaves_into(*elem, base + i * e.size, out, depth + 1)?;
                    }
                }
                AggTy::Tuple(_) | AggTy::Struct(_) => {
                    let (offsets, _) = self.layout(id)?;
                    for (f, off) in self.components(id).into_iter().zip(offsets) {
                        self.leaves_into(f, base + off, out, depth + 1)?;
                    }
                }
            },
            _ => return None,
        }
        Some(())
    }

    /// The element size of an array of `elem`, in bytes.
    pub fn elem_size(&self, elem: Elem) -> u64 {
        match elem {
            Elem::Scalar(s) => s.size() as u64,
            Elem::Struct(id) => self.size_align(Ty::Agg(id)).map(|s| s.size).unwrap_or(0),
        }
    }

    /// The array type as the source writes it (`&mut [Particle]`).
    pub fn array_name(&self, a: &ArrayTy) -> String {
        let m = if a.writable { "&mut " } else { "&" };
        let e = match a.elem {
            Elem::Scalar(s) => s.name().to_string(),
            Elem::Struct(id) => self.strukt(id).map(|s| s.name.clone()).unwrap_or_else(|| format!("struct #{id}")),
        };
        if a.ndim == 1 { format!("{m}[{e}]") } else { format!("{m}Array<{e}, {}>", a.ndim) }
    }

    /// A type as the source writes it, `leaf` naming what is not an aggregate.
    pub fn name_with(&self, t: Ty, leaf: &dyn Fn(Ty) -> String) -> String {
        self.name_depth(t, leaf, 0)
    }

    fn name_depth(&self, t: Ty, leaf: &dyn Fn(Ty) -> String, depth: u32) -> String {
        if depth > 64 {
            return "..".into();
        }
        match t {
            Ty::Agg(id) => match self.get(id) {
                Some(AggTy::Tuple(ts)) => {
                    let parts: Vec<String> = ts.iter().map(|t| self.name_depth(*t, leaf, depth + 1)).collect();
                    if parts.len() == 1 { format!("({},)", parts[0]) } else { format!("({})", parts.join(", ")) }
                }
                Some(AggTy::Array { elem, len }) => {
                    let e = self.name_depth(*elem, leaf, depth + 1);
                    if *len == UNKNOWN_LEN { format!("[{e}; _]") } else { format!("[{e}; {len}]") }
                }
                Some(AggTy::Struct(s)) => s.name.clone(),
                None => format!("aggregate #{id}"),
            },
            Ty::Array(a) => self.array_name(&a),
            t => leaf(t),
        }
    }

    /// A type as the source writes it (enums by id: use [`name_with`](Self::name_with) where
    /// their names are known).
    pub fn name(&self, t: Ty) -> String {
        self.name_with(t, &|t| t.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_follow_c() {
        let mut t = Types::default();
        let v3 = t.intern(AggTy::Array { elem: Ty::Scalar(Scalar::F32), len: 3 });
        let p = t.add_struct(StructDef {
            name: "Particle".into(),
            fields: vec![
                ("pos".into(), Ty::Agg(v3)),
                ("alive".into(), Ty::Scalar(Scalar::Bool)),
                ("mass".into(), Ty::Scalar(Scalar::F64)),
                ("tag".into(), Ty::Scalar(Scalar::U16)),
            ],
        });
        let (offsets, sa) = t.layout(p).unwrap();
        assert_eq!(offsets, vec![0, 12, 16, 24]);
        assert_eq!(sa, SizeAlign { size: 32, align: 8 });
        assert_eq!(t.intern(AggTy::Array { elem: Ty::Scalar(Scalar::F32), len: 3 }), v3);
        let leaves = t.leaves(Ty::Agg(p)).unwrap();
        assert_eq!(leaves.len(), 6);
        assert_eq!(leaves[3], (12, Scalar::Bool));
        assert_eq!(t.name(Ty::Agg(v3)), "[f32; 3]");
        let pair = t.intern(AggTy::Tuple(vec![Ty::Scalar(Scalar::U8), Ty::Agg(p)]));
        assert_eq!(t.layout(pair).unwrap().0, vec![0, 8]);
        assert_eq!(t.name(Ty::Agg(pair)), "(u8, Particle)");
    }
}
