//! C-like enums: each enum item's discriminants (explicit constants or the previous plus one,
//! from 0, of the `#[repr]` integer type or `i32`), checked once and entered in the program's
//! table of enum types when first used, and the operators an enum supports (`==` and `!=` with
//! `#[derive(PartialEq)]`, `<` and friends with `#[derive(PartialOrd)]`, `as` to integers).

use crate::ir::*;
use crate::lang::ast::{self, Item};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::fold::int_range;
use super::items::ModuleCx;

impl<'m> ModuleCx<'m> {
    /// The enum type of enum item `i`, its definition checked and added to the program's table
    /// on first use.
    pub(super) fn enum_ty(&mut self, i: usize) -> CResult<EnumTy> {
        if let Some(t) = self.enum_ids.get(&i) {
            return Ok(*t);
        }
        let Item::Enum(e) = &self.m.items[i] else {
            return Err(Diagnostic::error(self.m.items[i].name().span, "expected an enum").label("here").into());
        };
        let repr = e.repr.unwrap_or(Scalar::I32);
        let (lo, hi) = int_range(repr);
        let mut variants: Vec<(String, i128)> = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        let mut next: Option<i128> = Some(0);
        for v in &e.variants {
            let d = match &v.discriminant {
                Some(x) => {
                    let val = self.eval_const(x, Some(repr), e.module).map_err(|d| {
                        d.note(format!(
                            "the discriminants of `{}` are `{repr}`s{}",
                            e.name.name,
                            if e.repr.is_none() { " (write `#[repr(u8)]` or another integer type for another)" } else { "" }
                        ))
                    })?;
                    val.as_i128().unwrap_or(0)
                }
                None => match next {
                    Some(n) if n <= hi => n,
                    _ => {
                        return Err(Diagnostic::error(
                            v.name.span,
                            format!("enum discriminant overflowed: `{}` would be past `{repr}::MAX`", v.name.name),
                        )
                        .label("overflowed")
                        .help("give it an explicit discriminant, or widen the `#[repr]`")
                        .into());
                    }
                },
            };
            debug_assert!(d >= lo && d <= hi);
            if let Some(k) = variants.iter().position(|(_, x)| *x == d) {
                return Err(Diagnostic::error(v.name.span, format!("discriminant value `{d}` assigned more than once"))
                    .label(format!("`{d}` assigned here"))
                    .secondary(spans[k], format!("first assigned to `{}`", variants[k].0))
                    .into());
            }
            variants.push((v.name.name.clone(), d));
            spans.push(v.name.span);
            next = d.checked_add(1);
        }
        let name = self.m.qualified(e.module, &e.name.name);
        let id = self.enums.len() as u32;
        self.enums.push(EnumDef { name: name.clone(), repr, variants });
        self.enum_names.borrow_mut().push(name);
        let t = EnumTy { id, repr };
        self.enum_ids.insert(i, t);
        Ok(t)
    }

    /// The enum item of an enum type.
    pub(super) fn enum_item(&self, t: EnumTy) -> Option<&'m ast::EnumItem> {
        let (&i, _) = self.enum_ids.iter().find(|(_, e)| e.id == t.id)?;
        match &self.m.items[i] {
            Item::Enum(e) => Some(e),
            _ => None,
        }
    }

    /// Whether enum `t` derives `tr` (`PartialEq`, `PartialOrd`).
    pub(super) fn enum_derives(&self, t: EnumTy, tr: &str) -> bool {
        self.enum_item(t).is_some_and(|e| e.derives.iter().any(|d| d == tr || d.ends_with(&format!("::{tr}"))))
    }

    /// The error for an operator an enum does not have (rustc's E0369).
    pub(super) fn enum_op_error(&self, t: EnumTy, op: BinOp, span: Span) -> Diagnostic {
        let name = &self.enums[t.id as usize].name;
        let mut d = Diagnostic::error(span, format!("binary operation `{}` cannot be applied to type `{name}`", op.symbol()))
            .label(format!("`{name}` is an enum"));
        d = match op {
            BinOp::Eq | BinOp::Ne => {
                d.help(format!("add `#[derive(PartialEq)]` to `{name}`, or compare the discriminants: `a as i32 == b as i32`"))
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                d.help(format!("add `#[derive(PartialEq, PartialOrd)]` to `{name}`, or compare the discriminants with `as`"))
            }
            _ => d.help("convert to the discriminant first: `x as i32`"),
        };
        d
    }
}
