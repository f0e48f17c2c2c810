//! Generic structs and enums with fields (`Option` among them): each is a template whose
//! fields' types name its parameters ([`Ty::Param`] by position, array lengths that depend on
//! const parameters by a marker), and each instance (`Vec2<f32>`, `Option<u32>`) is an
//! aggregate of its own in the program's [`Types`], made once by substituting the arguments.
//!
//! An enum with fields is laid out as a struct: a `u32` tag (the variant's position) and, for
//! each variant with fields, a tuple of them. Every variant but the one the tag names holds
//! zeros, so a value is always fully initialised, comparing two values compares every part,
//! and a `match` reads the tag and the payload it names (`patterns.rs`).
//!
//! The table is shared (`Rc<RefCell<..>>`) by the module context, which enters templates, and
//! every function's unifier, which instantiates one once its arguments are settled.

use std::collections::HashMap;

use crate::ir::*;
use crate::lang::ast::StructKind;

/// Index of a template in [`Adts`].
pub(super) type AdtId = u32;

/// An argument of an instance: a type, or the value of a const parameter (its type and its
/// value, or unknown in a generic definition).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum GArg {
    Ty(Ty),
    Const(Scalar, Option<u64>),
}

/// An array length in a template: an expression of the const parameters.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum LenExpr {
    Lit(u64),
    Param(usize),
    Bin(BinOp, Box<LenExpr>, Box<LenExpr>),
}

impl LenExpr {
    fn eval(&self, args: &[GArg]) -> Option<u64> {
        Some(match self {
            LenExpr::Lit(v) => *v,
            LenExpr::Param(k) => match args.get(*k)? {
                GArg::Const(_, v) => (*v)?,
                GArg::Ty(_) => return None,
            },
            LenExpr::Bin(op, a, b) => {
                let (a, b) = (a.eval(args)?, b.eval(args)?);
                match op {
                    BinOp::Add => a.checked_add(b)?,
                    BinOp::Sub => a.checked_sub(b)?,
                    BinOp::Mul => a.checked_mul(b)?,
                    BinOp::Div => a.checked_div(b)?,
                    BinOp::Rem => a.checked_rem(b)?,
                    BinOp::Shl => a.checked_shl(u32::try_from(b).ok()?)?,
                    BinOp::Shr => a.checked_shr(u32::try_from(b).ok()?)?,
                    _ => return None,
                }
            }
        })
    }
}

/// Lengths at or above this in a template are `len_exprs[len - LEN_MARK]`.
const LEN_MARK: u64 = u64::MAX - (1 << 16);

/// A variant of an enum with fields.
#[derive(Clone, Debug)]
pub(super) struct VariantShape {
    pub(super) name: String,
    pub(super) kind: StructKind,
    /// Field names (`0`, `1`, .. for a tuple variant) and types.
    pub(super) fields: Vec<(String, Ty)>,
    /// The component of the layout holding its fields (`None`: no fields).
    pub(super) payload: Option<u32>,
}

/// What a template is.
#[derive(Clone, Debug)]
pub(super) enum AdtShape {
    Struct { kind: StructKind, fields: Vec<(String, Ty)> },
    Enum { variants: Vec<VariantShape> },
}

/// A generic struct or an enum with fields.
#[derive(Clone, Debug)]
pub(super) struct AdtDef {
    /// Its item (`None`: the language's own `Option`).
    pub(super) item: Option<usize>,
    /// Its name, qualified by its module outside the root.
    pub(super) name: String,
    /// Its generic parameters: names, and the scalar type of each const parameter.
    pub(super) params: Vec<(String, Option<Scalar>)>,
    pub(super) shape: AdtShape,
    pub(super) len_exprs: Vec<LenExpr>,
    pub(super) derives: Vec<String>,
}

impl AdtDef {
    /// Whether it derives `tr` (`PartialEq`, `Default`, ..).
    pub(super) fn derives(&self, tr: &str) -> bool {
        self.derives.iter().any(|d| d == tr || d.ends_with(&format!("::{tr}")))
    }

    /// The variants of an enum (empty for a struct).
    pub(super) fn variants(&self) -> &[VariantShape] {
        match &self.shape {
            AdtShape::Enum { variants } => variants,
            AdtShape::Struct { .. } => &[],
        }
    }
}

/// Every template of the module and every instance made so far.
#[derive(Default)]
pub(super) struct Adts {
    pub(super) defs: Vec<AdtDef>,
    pub(super) by_item: HashMap<usize, AdtId>,
    instances: HashMap<(AdtId, Vec<GArg>), AggId>,
    /// The template and arguments of each instance.
    pub(super) of_agg: HashMap<AggId, (AdtId, Vec<GArg>)>,
    /// The names of the type parameters of the functions whose instances name them, for
    /// instance names (set by the unifier's owner).
    pub(super) param_names: Vec<String>,
    /// The names of the enums, by id, for instance names.
    pub(super) enum_names: Vec<String>,
}

/// Deeper nesting than this is a recursive type, not a type.
const MAX_DEPTH: u32 = 48;

impl Adts {
    /// Enters a template; `len` lengths of its arrays name `len_exprs` through
    /// [`Adts::len_marker`].
    pub(super) fn add(&mut self, def: AdtDef) -> AdtId {
        let id = self.defs.len() as AdtId;
        if let Some(i) = def.item {
            self.by_item.insert(i, id);
        }
        self.defs.push(def);
        id
    }

    /// The array length standing for `len_exprs[k]` in a template.
    pub(super) fn len_marker(k: usize) -> u64 {
        LEN_MARK + k as u64
    }

    /// Whether a length (or a constant argument) in a template stands for an expression.
    pub(super) fn is_marker(v: u64) -> bool {
        (LEN_MARK..UNKNOWN_LEN).contains(&v)
    }

    /// The value of a marker for an instance's arguments.
    pub(super) fn eval_marker(v: u64, lens: &[LenExpr], args: &[GArg]) -> Option<u64> {
        lens.get((v - LEN_MARK) as usize)?.eval(args)
    }

    pub(super) fn def(&self, id: AdtId) -> &AdtDef {
        &self.defs[id as usize]
    }

    /// The template and arguments of an instance.
    pub(super) fn instance_of(&self, id: AggId) -> Option<(AdtId, Vec<GArg>)> {
        self.of_agg.get(&id).cloned()
    }

    /// The instance of `adt` for `args`, made on first use: `None` if it would be infinite (a
    /// recursive type).
    pub(super) fn instantiate(&mut self, types: &mut Types, adt: AdtId, args: &[GArg]) -> Option<AggId> {
        self.instantiate_depth(types, adt, args, 0)
    }

    fn instantiate_depth(&mut self, types: &mut Types, adt: AdtId, args: &[GArg], depth: u32) -> Option<AggId> {
        if depth > MAX_DEPTH {
            return None;
        }
        let key = (adt, args.to_vec());
        if let Some(id) = self.instances.get(&key) {
            return Some(*id);
        }
        let def = self.defs.get(adt as usize)?.clone();
        let name = self.instance_name(types, adt, args);
        // Entered before its fields, so that a field naming the same instance finds it (and is
        // refused as infinite by the size check of whoever asked).
        let id = types.add_struct(StructDef { name, fields: Vec::new() });
        self.instances.insert(key.clone(), id);
        self.of_agg.insert(id, key);
        let sub = |me: &mut Self, types: &mut Types, t: Ty| me.subst_depth(types, t, args, &def.len_exprs, depth + 1);
        let fields = match &def.shape {
            AdtShape::Struct { fields, .. } => {
                let mut out = Vec::with_capacity(fields.len());
                for (n, t) in fields {
                    out.push((n.clone(), sub(self, types, *t)?));
                }
                out
            }
            AdtShape::Enum { variants } => {
                let mut out = vec![("tag".to_string(), Ty::Scalar(Scalar::U32))];
                for v in variants {
                    if v.payload.is_none() {
                        continue;
                    }
                    let mut parts = Vec::with_capacity(v.fields.len());
                    for (_, t) in &v.fields {
                        parts.push(sub(self, types, *t)?);
                    }
                    out.push((v.name.clone(), Ty::Agg(types.intern(AggTy::Tuple(parts)))));
                }
                out
            }
        };
        types.set_fields(id, fields);
        Some(id)
    }

    fn subst_depth(&mut self, types: &mut Types, t: Ty, args: &[GArg], lens: &[LenExpr], depth: u32) -> Option<Ty> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match t {
            Ty::Param(p) => match args.get(p.index as usize) {
                Some(GArg::Ty(a)) => *a,
                _ => t,
            },
            Ty::Agg(id) => {
                if let Some((adt, inner)) = self.instance_of(id) {
                    let mut out = Vec::with_capacity(inner.len());
                    for a in inner {
                        out.push(match a {
                            GArg::Ty(t) => GArg::Ty(self.subst_depth(types, t, args, lens, depth + 1)?),
                            GArg::Const(s, Some(v)) if (LEN_MARK..UNKNOWN_LEN).contains(&v) => {
                                GArg::Const(s, lens.get((v - LEN_MARK) as usize).and_then(|e| e.eval(args)))
                            }
                            c => c,
                        });
                    }
                    return Some(Ty::Agg(self.instantiate_depth(types, adt, &out, depth + 1)?));
                }
                match types.get(id).cloned()? {
                    AggTy::Tuple(ts) => {
                        let mut out = Vec::with_capacity(ts.len());
                        for t in ts {
                            out.push(self.subst_depth(types, t, args, lens, depth + 1)?);
                        }
                        Ty::Agg(types.intern(AggTy::Tuple(out)))
                    }
                    AggTy::Array { elem, len } => {
                        let elem = self.subst_depth(types, elem, args, lens, depth + 1)?;
                        let len = if (LEN_MARK..UNKNOWN_LEN).contains(&len) {
                            lens.get((len - LEN_MARK) as usize).and_then(|e| e.eval(args)).unwrap_or(UNKNOWN_LEN)
                        } else {
                            len
                        };
                        Ty::Agg(types.intern(AggTy::Array { elem, len }))
                    }
                    AggTy::Struct(_) => t,
                }
            }
            t => t,
        })
    }

    /// `Vec2<f32>`, `Option<(u32, f32)>`: how messages name an instance.
    fn instance_name(&self, types: &Types, adt: AdtId, args: &[GArg]) -> String {
        let def = &self.defs[adt as usize];
        if args.is_empty() || def.name.starts_with("{closure") {
            return def.name.clone();
        }
        let shown: Vec<String> = args
            .iter()
            .map(|a| match a {
                GArg::Ty(t) => self.ty_name(types, *t),
                GArg::Const(Scalar::Bool, Some(v)) => (*v != 0).to_string(),
                GArg::Const(s, Some(v)) => ScalarValue::Int(*s, *v).as_i128().unwrap_or(0).to_string(),
                GArg::Const(..) => "_".to_string(),
            })
            .collect();
        format!("{}<{}>", def.name, shown.join(", "))
    }

    /// A type as messages write it.
    pub(super) fn ty_name(&self, types: &Types, t: Ty) -> String {
        types.name_with(t, &|t| match t {
            Ty::Param(p) => self.param_names.get(p.index as usize).cloned().unwrap_or_else(|| format!("T{}", p.index)),
            Ty::Enum(e) => self.enum_names.get(e.id as usize).cloned().unwrap_or_else(|| t.to_string()),
            t => t.to_string(),
        })
    }
}
