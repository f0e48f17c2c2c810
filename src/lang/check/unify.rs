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

/// A type variable: linked to another, settled, or still open.
#[derive(Clone, Copy, Debug)]
pub(super) enum Node {
    Link(H),
    Known(Ty),
    Var(Kind),
}

/// Type variables with union-find.
#[derive(Default)]
pub(super) struct Unifier {
    nodes: Vec<Node>,
    /// The names of the type parameters of the generic body being checked, by index.
    pub(super) param_names: Vec<String>,
    /// The names of the module's enums, by id, for messages.
    enum_names: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
}

impl Unifier {
    pub(super) fn with_enum_names(enum_names: std::rc::Rc<std::cell::RefCell<Vec<String>>>) -> Unifier {
        Unifier { nodes: Vec::new(), enum_names, param_names: Vec::new() }
    }

    /// A type as the source writes it (an enum and a type parameter by its name).
    pub(super) fn ty_name(&self, t: Ty) -> String {
        let param = |p: TypeParam| self.param_names.get(p.index as usize).cloned().unwrap_or_else(|| format!("T{}", p.index));
        match t {
            Ty::Enum(e) => self.enum_names.borrow().get(e.id as usize).cloned().unwrap_or_else(|| t.to_string()),
            Ty::Param(p) => param(p),
            Ty::ParamArray(a) => {
                let m = if a.writable { "&mut " } else { "&" };
                if a.ndim == 1 { format!("{m}[{}]", param(a.elem)) } else { format!("{m}Array<{}, {}>", param(a.elem), a.ndim) }
            }
            t => t.to_string(),
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
    pub(super) fn ty(&mut self, h: H) -> Option<Ty> {
        match self.get(h) {
            Node::Known(t) => Some(t),
            _ => None,
        }
    }
    pub(super) fn describe(&mut self, h: H) -> String {
        match self.get(h) {
            Node::Known(t) => self.ty_name(t),
            Node::Var(Kind::Int) => "{integer}".into(),
            Node::Var(Kind::Float) => "{float}".into(),
            Node::Var(Kind::Any) => "_".into(),
            Node::Link(_) => "_".into(),
        }
    }
    pub(super) fn unify(&mut self, a: H, b: H) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return true;
        }
        match (self.nodes[ra as usize], self.nodes[rb as usize]) {
            (Node::Known(Ty::Never), _) | (_, Node::Known(Ty::Never)) => true,
            (Node::Known(x), Node::Known(y)) => match (x, y) {
                (Ty::Array(p), Ty::Array(q)) => p.elem == q.elem && p.ndim == q.ndim,
                (Ty::ParamArray(p), Ty::ParamArray(q)) => p.elem == q.elem && p.ndim == q.ndim,
                _ => x == y,
            },
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
        let r = self.find(h);
        match self.nodes[r as usize] {
            Node::Known(t) => Some(t),
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
            Class::Float | Class::SignedOrFloat => b == Bound::Float,
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
            Node::Known(t @ (Ty::Unit | Ty::Array(_) | Ty::ParamArray(_) | Ty::Enum(_))) => {
                let name = self.u.ty_name(t);
                Err(self.class_error(&name, class, span, &what).into())
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
