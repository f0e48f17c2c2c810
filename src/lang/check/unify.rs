//! Type inference: the unifier over type variables (any, integer, float), the classes an operand
//! must belong to, and the obligations that wait for a settled type.

use crate::ir::*;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::body::FnCx;

/// A type variable: its index in the [`Unifier`].
pub(super) type H = u32;

/// What a type variable may still become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Any,
    Int,
    Float,
}

/// A type variable: linked to another, settled, still open, or a tuple or fixed-size array
/// whose components are type variables (an index into [`Unifier::compounds`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum Node {
    Link(H),
    Known(Ty),
    Var(Kind),
    Compound(u32),
}

/// A tuple, array or instance of a generic struct or enum being inferred.
#[derive(Clone, Debug)]
pub(super) enum Compound {
    Tuple(Vec<H>),
    Array(H, u64),
    /// `Vec2<?T>`: a template of the module's [`Adts`] and its arguments.
    Adt(AdtId, Vec<ArgH>),
}

/// An argument of an instance being inferred: a type, or a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ArgH {
    Ty(H),
    Const(Scalar, Option<u64>),
}

/// Deeper nesting of aggregate types than this is an error, not a stack overflow.
const MAX_TYPE_DEPTH: u32 = 64;

/// Type variables with union-find.
#[derive(Default)]
pub(super) struct Unifier {
    nodes: Vec<Node>,
    compounds: Vec<Compound>,
    /// The names of the type parameters of the generic body being checked, by index.
    pub(super) param_names: Vec<String>,
    /// The names of the module's enums, by id, for messages.
    enum_names: Rc<RefCell<Vec<String>>>,
    /// The aggregate types of the program being checked.
    pub(super) types: Rc<RefCell<Types>>,
    /// The module's generic structs and enums with fields, and their instances.
    pub(super) adts: Rc<RefCell<Adts>>,
}

use std::cell::RefCell;
use std::rc::Rc;

use super::adt::{AdtId, Adts, GArg};

/// A state of the unifier to return to ([`Unifier::snapshot`]).
pub(super) struct Snapshot {
    nodes: Vec<Node>,
    compounds: Vec<Compound>,
}

impl Unifier {
    pub(super) fn new(enum_names: Rc<RefCell<Vec<String>>>, types: Rc<RefCell<Types>>, adts: Rc<RefCell<Adts>>) -> Unifier {
        Unifier { nodes: Vec::new(), compounds: Vec::new(), enum_names, param_names: Vec::new(), types, adts }
    }

    /// The current state, to try a unification and undo it ([`Unifier::rollback`]).
    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot { nodes: self.nodes.clone(), compounds: self.compounds.clone() }
    }

    /// Back to `s`: every variable and compound made before it as it was (those made since
    /// stay, as they are: a handle never dangles).
    pub(super) fn rollback(&mut self, s: Snapshot) {
        let n = s.nodes.len();
        self.nodes[..n].copy_from_slice(&s.nodes);
        let c = s.compounds.len();
        for (k, x) in s.compounds.into_iter().enumerate().take(c) {
            self.compounds[k] = x;
        }
    }

    /// A tuple of `hs` that stays a compound even when every element is known (nothing is
    /// entered in the program's types): for patterns tried and undone.
    pub(super) fn tuple_lazy(&mut self, hs: Vec<H>) -> H {
        self.compounds.push(Compound::Tuple(hs));
        self.nodes.push(Node::Compound((self.compounds.len() - 1) as u32));
        (self.nodes.len() - 1) as H
    }

    /// An array, as [`Unifier::tuple_lazy`].
    pub(super) fn array_lazy(&mut self, elem: H, len: u64) -> H {
        self.compounds.push(Compound::Array(elem, len));
        self.nodes.push(Node::Compound((self.compounds.len() - 1) as u32));
        (self.nodes.len() - 1) as H
    }

    /// The instance of template `adt` for `args`: settled (entered in the program's types)
    /// once every argument is known and `lazy` is false.
    pub(super) fn adt(&mut self, adt: AdtId, args: Vec<ArgH>, lazy: bool) -> H {
        let consts_known = args.iter().all(|a| !matches!(a, ArgH::Const(_, None)));
        if !lazy
            && consts_known
            && let Some(t) = self.adt_settled(adt, &args, 0)
        {
            return self.known(t);
        }
        self.compounds.push(Compound::Adt(adt, args));
        self.nodes.push(Node::Compound((self.compounds.len() - 1) as u32));
        (self.nodes.len() - 1) as H
    }

    /// The instance when every argument is known.
    fn adt_settled(&mut self, adt: AdtId, args: &[ArgH], depth: u32) -> Option<Ty> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            out.push(match a {
                ArgH::Ty(h) => GArg::Ty(self.ty_depth(*h, depth + 1)?),
                ArgH::Const(s, v) => GArg::Const(*s, *v),
            });
        }
        let id = self.adts.borrow_mut().instantiate(&mut self.types.borrow_mut(), adt, &out)?;
        Some(Ty::Agg(id))
    }

    /// A template's type `t` (its parameters [`Ty::Param`] by position) with `args` for them:
    /// the type of a field of an instance being inferred.
    pub(super) fn inst_h(&mut self, t: Ty, args: &[ArgH], lens: &[super::adt::LenExpr]) -> H {
        self.inst_depth(t, args, lens, 0)
    }

    fn inst_depth(&mut self, t: Ty, args: &[ArgH], lens: &[super::adt::LenExpr], depth: u32) -> H {
        if depth > MAX_TYPE_DEPTH {
            return self.known(t);
        }
        let gargs = || -> Vec<GArg> {
            args.iter()
                .map(|a| match a {
                    ArgH::Ty(_) => GArg::Ty(Ty::Unit),
                    ArgH::Const(s, v) => GArg::Const(*s, *v),
                })
                .collect()
        };
        match t {
            Ty::Param(p) => match args.get(p.index as usize) {
                Some(ArgH::Ty(h)) => *h,
                _ => self.known(t),
            },
            Ty::Agg(id) => {
                let inst = self.adts.borrow().instance_of(id);
                if let Some((adt, inner)) = inst {
                    let mut out = Vec::with_capacity(inner.len());
                    for a in inner {
                        out.push(match a {
                            GArg::Ty(t) => ArgH::Ty(self.inst_depth(t, args, lens, depth + 1)),
                            GArg::Const(s, Some(v)) if super::adt::Adts::is_marker(v) => {
                                ArgH::Const(s, super::adt::Adts::eval_marker(v, lens, &gargs()))
                            }
                            GArg::Const(s, v) => ArgH::Const(s, v),
                        });
                    }
                    return self.adt(adt, out, false);
                }
                let agg = self.types.borrow().get(id).cloned();
                match agg {
                    Some(AggTy::Tuple(ts)) => {
                        let hs = ts.into_iter().map(|t| self.inst_depth(t, args, lens, depth + 1)).collect();
                        self.tuple(hs)
                    }
                    Some(AggTy::Array { elem, len }) => {
                        let e = self.inst_depth(elem, args, lens, depth + 1);
                        let len = if super::adt::Adts::is_marker(len) {
                            super::adt::Adts::eval_marker(len, lens, &gargs()).unwrap_or(UNKNOWN_LEN)
                        } else {
                            len
                        };
                        self.array(e, len)
                    }
                    _ => self.known(t),
                }
            }
            t => self.known(t),
        }
    }

    /// The template and arguments of an instance's type (settled or being inferred).
    pub(super) fn adt_of(&mut self, h: H) -> Option<(AdtId, Vec<ArgH>)> {
        let r = self.find(h);
        match self.nodes[r as usize] {
            Node::Compound(c) => match self.compounds[c as usize].clone() {
                Compound::Adt(a, args) => Some((a, args)),
                _ => None,
            },
            Node::Known(Ty::Agg(id)) => {
                let (a, args) = self.adts.borrow().instance_of(id)?;
                let args = args
                    .into_iter()
                    .map(|g| match g {
                        GArg::Ty(t) => ArgH::Ty(self.known(t)),
                        GArg::Const(s, v) => ArgH::Const(s, v),
                    })
                    .collect();
                Some((a, args))
            }
            _ => None,
        }
    }

    /// A type as the source writes it (an enum, a struct and a type parameter by its name).
    pub(super) fn ty_name(&self, t: Ty) -> String {
        let param = |p: TypeParam| self.param_names.get(p.index as usize).cloned().unwrap_or_else(|| format!("T{}", p.index));
        let leaf = |t: Ty| match t {
            Ty::Enum(e) => self.enum_names.borrow().get(e.id as usize).cloned().unwrap_or_else(|| t.to_string()),
            Ty::Param(p) => param(p),
            Ty::ParamArray(a) => {
                let m = if a.writable { "&mut " } else { "&" };
                if a.ndim == 1 { format!("{m}[{}]", param(a.elem)) } else { format!("{m}Array<{}, {}>", param(a.elem), a.ndim) }
            }
            t => t.to_string(),
        };
        self.types.borrow().name_with(t, &leaf)
    }

    /// A tuple of the types `hs` (settled at once when every element is).
    pub(super) fn tuple(&mut self, hs: Vec<H>) -> H {
        let known: Option<Vec<Ty>> = hs.iter().map(|h| self.ty(*h)).collect();
        if let Some(ts) = known {
            let id = self.types.borrow_mut().intern(AggTy::Tuple(ts));
            return self.known(Ty::Agg(id));
        }
        self.compounds.push(Compound::Tuple(hs));
        self.nodes.push(Node::Compound((self.compounds.len() - 1) as u32));
        (self.nodes.len() - 1) as H
    }

    /// An array of `len` elements of type `elem`.
    pub(super) fn array(&mut self, elem: H, len: u64) -> H {
        if let Some(t) = self.ty(elem) {
            let id = self.types.borrow_mut().intern(AggTy::Array { elem: t, len });
            return self.known(Ty::Agg(id));
        }
        self.compounds.push(Compound::Array(elem, len));
        self.nodes.push(Node::Compound((self.compounds.len() - 1) as u32));
        (self.nodes.len() - 1) as H
    }

    /// The components of a tuple or array type (settled or being inferred): `Tuple` with the
    /// elements' variables, or `Array` with the element's and the length; `None` for any
    /// other type, or one not yet known.
    pub(super) fn compound(&mut self, h: H) -> Option<Compound> {
        let r = self.find(h);
        match self.nodes[r as usize] {
            Node::Compound(c) => Some(self.compounds[c as usize].clone()),
            Node::Known(Ty::Agg(id)) => {
                let t = self.types.borrow().get(id).cloned();
                match t? {
                    AggTy::Tuple(ts) => Some(Compound::Tuple(ts.into_iter().map(|t| self.known(t)).collect())),
                    AggTy::Array { elem, len } => {
                        let e = self.known(elem);
                        Some(Compound::Array(e, len))
                    }
                    AggTy::Struct(_) => None,
                }
            }
            _ => None,
        }
        .filter(|c| !matches!(c, Compound::Adt(..)))
    }

    /// Whether `h` occurs in the type of `r` (a variable must not become a type containing
    /// itself).
    fn occurs(&mut self, h: H, r: H, depth: u32) -> bool {
        if depth > MAX_TYPE_DEPTH {
            return true;
        }
        let r = self.find(r);
        if r == h {
            return true;
        }
        match self.nodes[r as usize] {
            Node::Compound(c) => match self.compounds[c as usize].clone() {
                Compound::Tuple(hs) => hs.into_iter().any(|x| self.occurs(h, x, depth + 1)),
                Compound::Array(e, _) => self.occurs(h, e, depth + 1),
                Compound::Adt(_, args) => args.into_iter().any(|a| matches!(a, ArgH::Ty(x) if self.occurs(h, x, depth + 1))),
            },
            _ => false,
        }
    }

    pub(super) fn var(&mut self, k: Kind) -> H {
        self.nodes.push(Node::Var(k));
        (self.nodes.len() - 1) as H
    }
    pub(super) fn known(&mut self, t: Ty) -> H {
        self.nodes.push(Node::Known(t));
        (self.nodes.len() - 1) as H
    }
    fn find(&mut self, h: H) -> H {
        let mut r = h;
        while let Node::Link(n) = self.nodes[r as usize] {
            r = n;
        }
        let mut c = h;
        while let Node::Link(n) = self.nodes[c as usize] {
            self.nodes[c as usize] = Node::Link(r);
            c = n;
        }
        r
    }
    pub(super) fn get(&mut self, h: H) -> Node {
        let r = self.find(h);
        self.nodes[r as usize]
    }
    /// The settled type of `h`, if it is known (a tuple or array whose components are all
    /// known is settled here).
    pub(super) fn ty(&mut self, h: H) -> Option<Ty> {
        self.ty_depth(h, 0)
    }

    fn ty_depth(&mut self, h: H, depth: u32) -> Option<Ty> {
        let r = self.find(h);
        match self.nodes[r as usize] {
            Node::Known(t) => Some(t),
            Node::Compound(c) if depth < MAX_TYPE_DEPTH => {
                let t = match self.compounds[c as usize].clone() {
                    Compound::Tuple(hs) => {
                        let ts = hs.into_iter().map(|x| self.ty_depth(x, depth + 1)).collect::<Option<Vec<_>>>()?;
                        AggTy::Tuple(ts)
                    }
                    Compound::Array(e, len) => AggTy::Array { elem: self.ty_depth(e, depth + 1)?, len },
                    Compound::Adt(a, args) => {
                        let t = self.adt_settled(a, &args, depth)?;
                        self.nodes[r as usize] = Node::Known(t);
                        return Some(t);
                    }
                };
                let id = self.types.borrow_mut().intern(t);
                self.nodes[r as usize] = Node::Known(Ty::Agg(id));
                Some(Ty::Agg(id))
            }
            _ => None,
        }
    }

    pub(super) fn describe(&mut self, h: H) -> String {
        self.describe_depth(h, 0)
    }

    fn describe_depth(&mut self, h: H, depth: u32) -> String {
        if depth > MAX_TYPE_DEPTH {
            return "..".into();
        }
        match self.get(h) {
            Node::Known(t) => self.ty_name(t),
            Node::Var(Kind::Int) => "{integer}".into(),
            Node::Var(Kind::Float) => "{float}".into(),
            Node::Var(Kind::Any) => "_".into(),
            Node::Link(_) => "_".into(),
            Node::Compound(c) => match self.compounds[c as usize].clone() {
                Compound::Tuple(hs) => {
                    let parts: Vec<String> = hs.into_iter().map(|x| self.describe_depth(x, depth + 1)).collect();
                    if parts.len() == 1 { format!("({},)", parts[0]) } else { format!("({})", parts.join(", ")) }
                }
                Compound::Array(e, len) => {
                    let e = self.describe_depth(e, depth + 1);
                    if len == UNKNOWN_LEN { format!("[{e}; _]") } else { format!("[{e}; {len}]") }
                }
                Compound::Adt(a, args) => {
                    let name = self.adts.borrow().def(a).name.clone();
                    let parts: Vec<String> = args
                        .into_iter()
                        .map(|x| match x {
                            ArgH::Ty(h) => self.describe_depth(h, depth + 1),
                            ArgH::Const(s, Some(v)) => ScalarValue::Int(s, v).as_i128().unwrap_or(0).to_string(),
                            ArgH::Const(..) => "_".into(),
                        })
                        .collect();
                    format!("{name}<{}>", parts.join(", "))
                }
            },
        }
    }

    /// Whether two settled types are one (a fixed-size array of [`UNKNOWN_LEN`], in a generic
    /// definition, stands for every length).
    fn same(&self, x: Ty, y: Ty, depth: u32) -> bool {
        match (x, y) {
            (Ty::Array(p), Ty::Array(q)) => p.elem == q.elem && p.ndim == q.ndim,
            (Ty::ParamArray(p), Ty::ParamArray(q)) => p.elem == q.elem && p.ndim == q.ndim,
            (Ty::Agg(a), Ty::Agg(b)) if a != b && depth < MAX_TYPE_DEPTH => {
                let types = self.types.borrow();
                match (types.get(a), types.get(b)) {
                    (Some(AggTy::Array { elem: e1, len: l1 }), Some(AggTy::Array { elem: e2, len: l2 })) => {
                        let (e1, e2, l1, l2) = (*e1, *e2, *l1, *l2);
                        drop(types);
                        (l1 == l2 || l1 == UNKNOWN_LEN || l2 == UNKNOWN_LEN) && self.same(e1, e2, depth + 1)
                    }
                    (Some(AggTy::Tuple(t1)), Some(AggTy::Tuple(t2))) if t1.len() == t2.len() => {
                        let pairs: Vec<(Ty, Ty)> = t1.iter().copied().zip(t2.iter().copied()).collect();
                        drop(types);
                        pairs.into_iter().all(|(p, q)| self.same(p, q, depth + 1))
                    }
                    _ => false,
                }
            }
            _ => x == y,
        }
    }

    pub(super) fn unify(&mut self, a: H, b: H) -> bool {
        self.unify_depth(a, b, 0)
    }

    fn unify_depth(&mut self, a: H, b: H, depth: u32) -> bool {
        if depth > MAX_TYPE_DEPTH {
            return false;
        }
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return true;
        }
        match (self.nodes[ra as usize], self.nodes[rb as usize]) {
            (Node::Known(Ty::Never), _) | (_, Node::Known(Ty::Never)) => true,
            (Node::Known(x), Node::Known(y)) => self.same(x, y, depth),
            (Node::Compound(_), Node::Compound(_) | Node::Known(Ty::Agg(_))) | (Node::Known(Ty::Agg(_)), Node::Compound(_)) => {
                if let (Some((a1, x1)), Some((a2, x2))) = (self.adt_of(ra), self.adt_of(rb)) {
                    let ok = a1 == a2
                        && x1.len() == x2.len()
                        && x1.into_iter().zip(x2).all(|(p, q)| match (p, q) {
                            (ArgH::Ty(p), ArgH::Ty(q)) => self.unify_depth(p, q, depth + 1),
                            (ArgH::Const(_, Some(v)), ArgH::Const(_, Some(w))) => v == w,
                            (ArgH::Const(..), ArgH::Const(..)) => true,
                            _ => false,
                        });
                    if ok {
                        // A constant one side does not know yet is the other's.
                        let (x1, x2) = (self.adt_of(ra).map(|x| x.1).unwrap_or_default(), self.adt_of(rb).map(|x| x.1).unwrap_or_default());
                        let merged: Vec<ArgH> = x1
                            .iter()
                            .zip(&x2)
                            .map(|(p, q)| match (p, q) {
                                (ArgH::Const(s, None), ArgH::Const(_, Some(v))) => ArgH::Const(*s, Some(*v)),
                                (p, _) => *p,
                            })
                            .collect();
                        for r in [ra, rb] {
                            if let Node::Compound(c) = self.nodes[r as usize]
                                && let Compound::Adt(a, _) = &self.compounds[c as usize]
                            {
                                self.compounds[c as usize] = Compound::Adt(*a, merged.clone());
                            }
                        }
                        if matches!(self.nodes[rb as usize], Node::Known(_)) {
                            self.nodes[ra as usize] = Node::Link(rb);
                        } else {
                            self.nodes[rb as usize] = Node::Link(ra);
                        }
                    }
                    return ok;
                }
                let (Some(x), Some(y)) = (self.compound(ra), self.compound(rb)) else { return false };
                // An array of unknown length (a template's field before its constants are
                // known) takes the other's length: the other is the representative.
                let a_unknown_len = matches!(x, Compound::Array(_, UNKNOWN_LEN)) && !matches!(y, Compound::Array(_, UNKNOWN_LEN));
                let ok = match (x, y) {
                    (Compound::Tuple(p), Compound::Tuple(q)) if p.len() == q.len() => {
                        p.into_iter().zip(q).all(|(p, q)| self.unify_depth(p, q, depth + 1))
                    }
                    (Compound::Array(p, l1), Compound::Array(q, l2)) if l1 == l2 || l1 == UNKNOWN_LEN || l2 == UNKNOWN_LEN => {
                        self.unify_depth(p, q, depth + 1)
                    }
                    _ => false,
                };
                if ok {
                    // The settled side stays the representative.
                    if matches!(self.nodes[rb as usize], Node::Known(_)) || a_unknown_len {
                        self.nodes[ra as usize] = Node::Link(rb);
                    } else {
                        self.nodes[rb as usize] = Node::Link(ra);
                    }
                }
                ok
            }
            (Node::Var(Kind::Any), Node::Compound(_)) => {
                if self.occurs(ra, rb, 0) {
                    return false;
                }
                self.nodes[ra as usize] = Node::Link(rb);
                true
            }
            (Node::Compound(_), Node::Var(Kind::Any)) => {
                if self.occurs(rb, ra, 0) {
                    return false;
                }
                self.nodes[rb as usize] = Node::Link(ra);
                true
            }
            (Node::Var(k), Node::Known(t)) if kind_accepts(k, t) => {
                self.nodes[ra as usize] = Node::Link(rb);
                true
            }
            (Node::Known(t), Node::Var(k)) if kind_accepts(k, t) => {
                self.nodes[rb as usize] = Node::Link(ra);
                true
            }
            (Node::Var(k1), Node::Var(k2)) => {
                let k = match (k1, k2) {
                    (Kind::Any, k) | (k, Kind::Any) => k,
                    (a, b) if a == b => a,
                    _ => return false,
                };
                self.nodes[ra as usize] = Node::Link(rb);
                self.nodes[rb as usize] = Node::Var(k);
                true
            }
            _ => false,
        }
    }
    /// The settled type: variables default like Rust's (`i32`, `f64`); `None` if unconstrained.
    pub(super) fn settle(&mut self, h: H) -> Option<Ty> {
        self.settle_depth(h, 0)
    }

    fn settle_depth(&mut self, h: H, depth: u32) -> Option<Ty> {
        if depth > MAX_TYPE_DEPTH {
            return None;
        }
        let r = self.find(h);
        match self.nodes[r as usize] {
            Node::Known(t) => Some(t),
            Node::Compound(c) => {
                match self.compounds[c as usize].clone() {
                    Compound::Tuple(hs) => {
                        for x in hs {
                            self.settle_depth(x, depth + 1)?;
                        }
                    }
                    Compound::Array(e, _) => {
                        self.settle_depth(e, depth + 1)?;
                    }
                    Compound::Adt(_, args) => {
                        for a in args {
                            if let ArgH::Ty(x) = a {
                                self.settle_depth(x, depth + 1)?;
                            }
                        }
                    }
                }
                self.ty_depth(r, depth)
            }
            Node::Var(Kind::Int) => {
                self.nodes[r as usize] = Node::Known(Ty::Scalar(Scalar::I32));
                Some(Ty::Scalar(Scalar::I32))
            }
            Node::Var(Kind::Float) => {
                self.nodes[r as usize] = Node::Known(Ty::Scalar(Scalar::F64));
                Some(Ty::Scalar(Scalar::F64))
            }
            _ => None,
        }
    }
}

fn kind_accepts(k: Kind, t: Ty) -> bool {
    match k {
        Kind::Any => !matches!(t, Ty::Never),
        Kind::Int => matches!(t, Ty::Scalar(s) if s.is_int()),
        Kind::Float => matches!(t, Ty::Scalar(s) if s.is_float()),
    }
}

/// A set of scalar types an operand must belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Numeric,
    Int,
    Float,
    SignedOrFloat,
    SignedInt,
    IntOrBool,
    Scalar,
}

impl Class {
    /// Whether every type a type parameter with bound `b` stands for is accepted.
    pub(super) fn accepts_bound(self, b: Bound) -> bool {
        match self {
            Class::Numeric | Class::Scalar => b.implies(Bound::Num),
            Class::Int | Class::IntOrBool => b == Bound::Int,
            Class::Float | Class::SignedOrFloat => b.implies(Bound::Float),
            // No bound admits only the signed integers.
            Class::SignedInt => false,
        }
    }
    /// The bound a type parameter needs for the class to accept it.
    pub(super) fn needed_bound(self) -> Bound {
        match self {
            Class::Numeric | Class::Scalar => Bound::Num,
            Class::Int | Class::IntOrBool | Class::SignedInt => Bound::Int,
            Class::Float | Class::SignedOrFloat => Bound::Float,
        }
    }
    pub(super) fn accepts(self, s: Scalar) -> bool {
        match self {
            Class::Numeric => s.is_numeric(),
            Class::Int => s.is_int(),
            Class::Float => s.is_float(),
            Class::SignedOrFloat => s.is_signed() || s.is_float(),
            Class::SignedInt => s.is_signed(),
            Class::IntOrBool => s.is_int() || s == Scalar::Bool,
            Class::Scalar => true,
        }
    }
    fn kind_ok(self, k: Kind) -> bool {
        match (self, k) {
            (_, Kind::Any) => true,
            (Class::Float, Kind::Int) | (Class::Int | Class::IntOrBool | Class::SignedInt, Kind::Float) => false,
            _ => true,
        }
    }
    pub(super) fn describe(self) -> &'static str {
        match self {
            Class::Numeric => "a number",
            Class::Int => "an integer",
            Class::Float => "a float (`f16`, `bf16`, `f32` or `f64`)",
            Class::SignedOrFloat => "a signed integer or a float",
            Class::SignedInt => "a signed integer",
            Class::IntOrBool => "an integer or `bool`",
            Class::Scalar => "a scalar",
        }
    }
}

/// A check that waits until the function is walked and its types are settled.
#[derive(Debug)]
pub(super) enum Oblig {
    Class {
        h: H,
        class: Class,
        span: Span,
        what: String,
    },
    Cast {
        h: H,
        to: Ty,
        span: Span,
    },
    Settled {
        h: H,
        span: Span,
    },
    /// A type argument inferred for the type parameter `param` of the generic function `func`
    /// must satisfy its bound.
    Bound {
        h: H,
        bound: Bound,
        param: String,
        func: String,
        span: Span,
    },
}

impl<'c, 'm> FnCx<'c, 'm> {
    pub(super) fn need(&mut self, h: H, class: Class, span: Span, what: impl Into<String>) -> CResult<()> {
        let what = what.into();
        match self.u.get(h) {
            Node::Known(Ty::Scalar(s)) if !class.accepts(s) => Err(self.class_error(s.name(), class, span, &what).into()),
            Node::Known(Ty::Param(p)) if !class.accepts_bound(p.bound) => Err(self.bound_error(p, class, span, &what).into()),
            Node::Known(Ty::Never | Ty::Param(_)) => Ok(()),
            Node::Known(t @ (Ty::Unit | Ty::Array(_) | Ty::ParamArray(_) | Ty::Enum(_) | Ty::Agg(_))) => {
                let name = self.u.ty_name(t);
                Err(self.class_error(&name, class, span, &what).into())
            }
            Node::Compound(_) => {
                let d = self.u.describe(h);
                Err(self.class_error(&d, class, span, &what).into())
            }
            Node::Var(k) if !class.kind_ok(k) => {
                let d = self.u.describe(h);
                Err(self.class_error(&d, class, span, &what).into())
            }
            _ => {
                self.obligations.push(Oblig::Class { h, class, span, what });
                Ok(())
            }
        }
    }

    pub(super) fn class_error(&self, found: &str, class: Class, span: Span, what: &str) -> Diagnostic {
        Diagnostic::error(span, format!("{what} cannot be applied to type `{found}`"))
            .label(format!("expected {}, found `{found}`", class.describe()))
    }

    /// The error for an operation the bound of type parameter `p` does not allow.
    pub(super) fn bound_error(&self, p: TypeParam, class: Class, span: Span, what: &str) -> Diagnostic {
        let name = self.u.ty_name(Ty::Param(p));
        let has = match p.bound.name() {
            Some(b) => format!("`{name}` is only bounded by `{b}`"),
            None => format!("`{name}` has no bound"),
        };
        let need = class.needed_bound();
        let d = Diagnostic::error(span, format!("{what} cannot be applied to type `{name}`"))
            .label(format!("expected {}, found `{name}`", class.describe()))
            .note(has);
        if class == Class::SignedInt {
            // No bound admits only the signed integers: the value must be converted.
            return d.help(format!("no bound admits only signed integers: convert first, `x as i64` (with `{name}: Int`)"));
        }
        d.help(format!("restrict the type parameter: `{name}: {}`", need.name().unwrap_or("Num")))
    }

    pub(super) fn mismatch(&mut self, span: Span, expected: H, found: H, context: &str) -> Diagnostic {
        let (e, f) = (self.u.describe(expected), self.u.describe(found));
        let mut d = Diagnostic::error(span, format!("mismatched types: expected `{e}`, found `{f}`"))
            .label(format!("expected `{e}`{context}"))
            .note("kache follows Rust: numbers are never converted implicitly");
        if let Some(help) = self.literal_as_param(expected, found, None) {
            return d.note("an unsuffixed literal does not take the type of a type parameter").help(help);
        }
        if is_num(&e) && is_num(&f) {
            d = d.help(format!("convert with `as`: `(..) as {}`", if e.starts_with('{') { "T" } else { &e }));
        }
        d
    }

    /// When one side is a type parameter and the other an unsuffixed literal: how to write the
    /// literal as the parameter's type (`T::ONE`, `2.0 as T`).
    pub(super) fn literal_as_param(&mut self, a: H, b: H, lit: Option<&PendingLit>) -> Option<String> {
        let (p, other) = match (self.u.ty(a), self.u.ty(b)) {
            (Some(Ty::Param(p)), _) => (p, b),
            (_, Some(Ty::Param(p))) => (p, a),
            _ => return None,
        };
        let kind = match self.u.get(other) {
            Node::Var(k @ (Kind::Int | Kind::Float)) => k,
            _ => return None,
        };
        let name = self.u.ty_name(Ty::Param(p));
        let shown = |l: &PendingLit| match (l.int, kind) {
            (Some(v), Kind::Int) => format!("{}{v}", if l.neg { "-" } else { "" }),
            _ => format!("{:?}", if l.neg { -l.f64 } else { l.f64 }),
        };
        Some(match lit {
            Some(l) if l.f64 == 0.0 => format!("write `{name}::ZERO`, or convert: `{} as {name}`", shown(l)),
            Some(l) if l.f64 == 1.0 && !l.neg => format!("write `{name}::ONE`, or convert: `{} as {name}`", shown(l)),
            Some(l) => format!("convert the literal: `{} as {name}`", shown(l)),
            None => format!("write `{name}::ZERO` or `{name}::ONE`, or convert the literal: `1.0 as {name}`"),
        })
    }

    pub(super) fn unify_or(&mut self, span: Span, expected: H, found: H, context: &str) -> CResult<()> {
        if self.u.unify(expected, found) { Ok(()) } else { Err(self.mismatch(span, expected, found, context).into()) }
    }
}

pub(super) fn is_num(s: &str) -> bool {
    s.starts_with('{') || Scalar::from_name(s).is_some_and(|s| s.is_numeric())
}
