//! Structs and `impl` blocks, the module's side: each struct item entered in the program's table
//! of types on first use (its fields resolved, a struct that contains itself refused), the type
//! an `impl` block is for, and the associated functions and constants of each type.

use std::collections::HashMap;

use crate::ir::*;
use crate::lang::ast::{self, ImplOwner, Item, ModId, OwnerKind};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::CResult;
use super::generics::GenericEnv;
use super::items::ModuleCx;

impl<'m> ModuleCx<'m> {
    /// The type of struct item `i`, its fields resolved and the struct entered in the program's
    /// table on first use.
    pub(super) fn struct_ty(&mut self, i: usize, used: Span) -> CResult<AggId> {
        if let Some(id) = self.struct_ids.get(&i) {
            if self.structs_in_progress.contains(&i) {
                return Err(self.recursive_struct(i, used));
            }
            return Ok(*id);
        }
        let Item::Struct(s) = &self.m.items[i] else {
            return Err(Diagnostic::error(used, "expected a struct").label("here").into());
        };
        let name = self.m.qualified(s.module, &s.name.name);
        let id = self.types.borrow_mut().add_struct(StructDef { name, fields: Vec::new() });
        self.struct_ids.insert(i, id);
        self.structs_in_progress.push(i);
        let saved = self.self_ty.replace(Ty::Agg(id));
        let r = self.struct_fields(s);
        self.self_ty = saved;
        self.structs_in_progress.pop();
        match r {
            Ok(fields) => {
                self.types.borrow_mut().set_fields(id, fields);
                self.check_size(Ty::Agg(id), s.name.span)?;
                Ok(id)
            }
            Err(d) => {
                // A later use must see the error again, not a struct without fields.
                self.struct_ids.remove(&i);
                Err(d)
            }
        }
    }

    fn struct_fields(&mut self, s: &'m ast::StructItem) -> CResult<Vec<(String, Ty)>> {
        let mut fields = Vec::new();
        for f in &s.fields {
            let t = self.ty_in(&f.ty, s.module, &GenericEnv::none())?;
            self.component_ty(t, f.ty.span(), "a struct field")?;
            fields.push((f.name.name.clone(), t));
        }
        Ok(fields)
    }

    fn recursive_struct(&self, i: usize, used: Span) -> Box<Diagnostic> {
        let name = &self.m.items[i].name().name;
        Diagnostic::error(self.m.items[i].name().span, format!("recursive type `{name}` has infinite size"))
            .label("recursive type")
            .secondary(used, "recursive without indirection")
            .help("a struct cannot contain itself, directly or through other structs, tuples or arrays")
            .into()
    }

    /// The type item (struct or enum) a type is, for its associated items.
    pub(super) fn type_item(&self, t: Ty) -> Option<usize> {
        match t {
            Ty::Agg(id) => self.item_of_agg(id),
            Ty::Enum(e) => self.enum_ids.iter().find(|(_, x)| x.id == e.id).map(|(i, _)| *i),
            _ => None,
        }
    }

    /// The type an `impl` block or trait of an associated constant names, where it needs no
    /// generic arguments (a trait's constant has none: its `Self` is the type it is used on).
    pub(super) fn owner_ty(&mut self, o: &ImplOwner, _module: ModId) -> CResult<Ty> {
        match o.kind {
            OwnerKind::Impl(i) => {
                let d = &self.m.impls[i];
                if !d.generics.is_empty() {
                    return Err(Diagnostic::error(o.span, "a constant of a generic `impl` block is not supported")
                        .label("generic `impl`")
                        .help("declare the constant in a trait, or outside the block")
                        .into());
                }
                let saved = self.self_ty.take();
                let r = self.ty_in(&d.self_ty, d.module, &GenericEnv::none());
                self.self_ty = saved;
                r.map_err(|_| self.bad_owner(i))
            }
            OwnerKind::Trait(_) => Err(Diagnostic::error(o.span, "a trait's constant is used through a type")
                .label("in this trait")
                .help("write `Type::NAME` or `T::NAME`")
                .into()),
        }
    }

    /// The struct or enum item an `impl` block is for (`None`: a scalar, a tuple, a type
    /// parameter, `Option`).
    pub(super) fn impl_for_item(&self, i: usize) -> Option<usize> {
        self.impl_head_item(i).ok().flatten()
    }

    /// The struct or enum item an inherent `impl` block names (`None`: not one of the
    /// crate's).
    fn impl_head_item(&self, i: usize) -> CResult<Option<usize>> {
        let d = &self.m.impls[i];
        let path = match &d.self_ty {
            ast::TypeExpr::Named(p, _) | ast::TypeExpr::Generic { path: p, .. } => p,
            _ => return Ok(None),
        };
        let res =
            if path.len() == 1 { self.m.scopes.type_name(d.module, &path[0].name) } else { self.m.scopes.path(self.m, d.module, path)?.1 };
        Ok(match res {
            Some(Res::Item(i)) if self.m.items[i].is_type() => Some(i),
            _ => None,
        })
    }

    pub(super) fn bad_owner(&self, i: usize) -> Box<Diagnostic> {
        let d = &self.m.impls[i];
        match &d.self_ty {
            ast::TypeExpr::Named(p, _) | ast::TypeExpr::Generic { path: p, .. } => {
                let name = p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
                Diagnostic::error(d.self_ty.span(), format!("cannot find type `{name}` for this `impl` block"))
                    .label("not a struct or enum of the kernel")
                    .help("`impl` blocks add methods to the kernel's own structs and enums")
                    .into()
            }
            other => Diagnostic::error(other.span(), "cannot define inherent `impl` for this type")
                .label("not a struct or enum of the kernel")
                .help("define a trait and `impl` it for the type: `trait Scale { fn scale(self) -> Self; } impl Scale for f32 { .. }`")
                .into(),
        }
    }

    /// The inherent `impl` blocks of every type, by the type's item: built once per context, with
    /// the errors of `impl` blocks that name no type or name one item twice.
    fn assoc_table(&mut self) -> CResult<&HashMap<usize, Vec<(String, usize)>>> {
        if self.assoc.is_none() {
            let mut table: HashMap<usize, Vec<(String, usize)>> = HashMap::new();
            for (k, d) in self.m.impls.iter().enumerate() {
                if d.trait_.is_some() {
                    continue;
                }
                let Some(t) = self.impl_head_item(k)? else { return Err(self.bad_owner(k)) };
                let list = table.entry(t).or_default();
                for &i in &d.items {
                    let name = self.m.items[i].name();
                    if let Some((_, prev)) = list.iter().find(|(n, _)| *n == name.name) {
                        return Err(Diagnostic::error(name.span, format!("duplicate definitions with name `{}`", name.name))
                            .label("duplicate definition")
                            .secondary(self.m.items[*prev].name().span, "other definition here")
                            .into());
                    }
                    list.push((name.name.clone(), i));
                }
            }
            self.assoc = Some(table);
        }
        Ok(self.assoc.get_or_insert_with(HashMap::new))
    }

    /// The inherent associated item `name` of type item `t` (a function or a constant).
    pub(super) fn assoc_item(&mut self, t: usize, name: &str) -> CResult<Option<usize>> {
        Ok(self.assoc_table()?.get(&t).and_then(|l| l.iter().find(|(n, _)| n == name)).map(|(_, i)| *i))
    }

    /// The names of the associated items of type item `t`, for suggestions.
    pub(super) fn assoc_names(&mut self, t: usize) -> Vec<String> {
        match self.assoc_table() {
            Ok(table) => table.get(&t).map(|l| l.iter().map(|(n, _)| n.clone()).collect()).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// Checks every inherent `impl` block names a type of the crate and defines each name once.
    pub(super) fn check_impl_heads(&mut self) -> CResult<()> {
        self.assoc_table().map(|_| ())
    }

    /// A path whose last segment names an inherent associated item of a type that needs no
    /// generic arguments: `Particle::new`, `common::Mode::from`, `Self::G`. The type (resolved
    /// in `module`, `Self` in the current `impl` block), its item and the associated item.
    pub(super) fn assoc_path(&mut self, path: &[ast::Ident], module: ModId) -> CResult<Option<(Ty, usize, usize)>> {
        let Some((last, ty_path)) = path.split_last() else { return Ok(None) };
        if ty_path.is_empty() {
            return Ok(None);
        }
        let t = if ty_path.len() == 1 && ty_path[0].name == "Self" {
            match self.self_ty {
                Some(t) => t,
                None => return Ok(None),
            }
        } else {
            let res = if ty_path.len() == 1 {
                self.m.scopes.type_name(module, &ty_path[0].name)
            } else {
                match self.m.scopes.path(self.m, module, ty_path) {
                    Ok((_, r)) => r,
                    Err(_) => None,
                }
            };
            match res {
                Some(Res::Item(i)) if self.m.items[i].is_type() && !self.is_template(i) => {
                    let span = ty_path[ty_path.len() - 1].span;
                    match &self.m.items[i] {
                        Item::Enum(_) => Ty::Enum(self.enum_ty(i)?),
                        _ => Ty::Agg(self.struct_ty(i, span)?),
                    }
                }
                _ => return Ok(None),
            }
        };
        let Some(ti) = self.type_item(t) else { return Ok(None) };
        Ok(self.assoc_item(ti, &last.name)?.map(|item| (t, ti, item)))
    }
}
