//! Names across the module tree, with Rust's rules: each module's scope holds its items, its
//! child modules and what its `use` declarations import (one name, a renamed one, a group, or
//! everything with `*`, from a module or an enum's variants); paths start at `crate`, `self`,
//! `super` or a name in scope and go down through modules to an item or an enum variant. An
//! item is visible outside its module when it is `pub`. Functions, constants, statics and
//! variants are values; modules and enums are types: the two namespaces are apart, as in Rust.

use std::collections::HashMap;

use crate::lang::ast::{Ident, Item, ModId, SourceModule};
use crate::lang::diag::Diagnostic;

type CResult<T> = Result<T, Box<Diagnostic>>;

/// What a name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Res {
    /// An item, by index into [`SourceModule::items`].
    Item(usize),
    /// Variant `.1` of the enum item `.0`.
    Variant(usize, usize),
    /// A module.
    Module(ModId),
}

#[derive(Clone, Copy, Debug)]
struct Binding {
    res: Res,
    /// Visible outside the module that holds the binding.
    public: bool,
    /// Brought in by a `*` import (an explicit name shadows it).
    glob: bool,
}

/// Every module's value and type namespaces.
#[derive(Debug, Default)]
pub struct Scopes {
    values: Vec<HashMap<String, Binding>>,
    types: Vec<HashMap<String, Binding>>,
}

enum Step {
    Found(Option<Res>, Option<Res>),
    /// The path starts outside the crate (`std::..`, another crate): imports of it are accepted
    /// and bind nothing.
    External,
}

impl Scopes {
    /// The scopes of every module; an import that names nothing, or a name bound twice, is an
    /// error.
    pub(crate) fn build(m: &SourceModule) -> CResult<Scopes> {
        let n = m.modules.len();
        let mut s = Scopes { values: vec![HashMap::new(); n], types: vec![HashMap::new(); n] };
        for (i, item) in m.items.iter().enumerate() {
            if item.owner().is_some() {
                // Associated items are named through their type (`Particle::new`).
                continue;
            }
            let b = Binding { res: Res::Item(i), public: item.is_pub(), glob: false };
            if item.in_type_namespace() {
                s.types[item.module()].insert(item.name().name.clone(), b);
            }
            if item.in_value_namespace() {
                s.values[item.module()].insert(item.name().name.clone(), b);
            }
        }
        for (id, md) in m.modules.iter().enumerate() {
            if let Some(p) = md.parent {
                s.types[p].insert(md.name.clone(), Binding { res: Res::Module(id), public: md.public, glob: false });
            }
        }
        // Imports may name what other imports bring in: resolve until nothing changes.
        let mut pending: Vec<(ModId, usize)> =
            m.modules.iter().enumerate().flat_map(|(id, md)| (0..md.uses.len()).map(move |u| (id, u))).collect();
        loop {
            let mut progress = false;
            let mut still = Vec::new();
            for (id, u) in pending {
                let decl = &m.modules[id].uses[u];
                match s.import(m, id, decl)? {
                    Some(changed) => progress |= changed,
                    None => still.push((id, u)),
                }
                if decl.glob {
                    // Globs stay: what they import may grow.
                    still.push((id, u));
                }
            }
            still.dedup();
            pending = still;
            if !progress {
                break;
            }
        }
        for (id, u) in pending {
            let decl = &m.modules[id].uses[u];
            if s.import(m, id, decl)?.is_none() {
                let path = decl.path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
                let at = decl.path.last().map(|i| i.span).unwrap_or(decl.alias.span);
                return Err(Diagnostic::error(at, format!("unresolved import `{path}`"))
                    .label("no such item in the kernel's modules")
                    .help("imports name items of the kernel's own modules: `use common::dot;`, `use common::{a, b};`, `use Mode::*;`")
                    .into());
            }
        }
        Ok(s)
    }

    /// Applies one import: `None` if what it names is not found (yet), else whether it bound
    /// something new.
    fn import(&mut self, m: &SourceModule, into: ModId, u: &crate::lang::ast::UseDecl) -> CResult<Option<bool>> {
        let step = if u.glob { self.walk(m, into, &u.path, true)? } else { self.walk(m, into, &u.path, false)? };
        let Step::Found(value, ty) = step else {
            return Ok(Some(false));
        };
        if u.glob {
            // `use path::*`: everything public in a module, or every variant of an enum.
            let Some(target) = ty else { return Ok(None) };
            let mut adds: Vec<(bool, String, Res)> = Vec::new();
            match target {
                Res::Module(t) => {
                    for (name, b) in &self.values[t] {
                        if !b.glob && self.visible(m, into, t, b.public) {
                            adds.push((false, name.clone(), b.res));
                        }
                    }
                    for (name, b) in &self.types[t] {
                        if !b.glob && self.visible(m, into, t, b.public) {
                            adds.push((true, name.clone(), b.res));
                        }
                    }
                }
                Res::Item(e) => {
                    if let Item::Enum(en) = &m.items[e] {
                        for (k, v) in en.variants.iter().enumerate() {
                            adds.push((false, v.name.name.clone(), Res::Variant(e, k)));
                        }
                    }
                }
                Res::Variant(..) => return Ok(None),
            }
            let mut changed = false;
            for (is_type, name, res) in adds {
                let ns = if is_type { &mut self.types[into] } else { &mut self.values[into] };
                if let std::collections::hash_map::Entry::Vacant(v) = ns.entry(name) {
                    v.insert(Binding { res, public: u.public, glob: true });
                    changed = true;
                }
            }
            return Ok(Some(changed));
        }
        if value.is_none() && ty.is_none() {
            return Ok(None);
        }
        let mut changed = false;
        for (is_type, res) in [(false, value), (true, ty)] {
            let Some(res) = res else { continue };
            let ns = if is_type { &mut self.types[into] } else { &mut self.values[into] };
            match ns.get(&u.alias.name) {
                Some(b) if b.res == res => {}
                Some(b) if !b.glob => {
                    return Err(Diagnostic::error(u.alias.span, format!("the name `{}` is defined multiple times", u.alias.name))
                        .label(format!("`{}` imported here, and already defined in this module", u.alias.name))
                        .help(format!("rename the import: `use .. as other_{};`", u.alias.name))
                        .into());
                }
                _ => {
                    ns.insert(u.alias.name.clone(), Binding { res, public: u.public, glob: false });
                    changed = true;
                }
            }
        }
        Ok(Some(changed))
    }

    /// Whether a binding of module `owner` (public or not) may be named from module `from`:
    /// always from `owner` itself and the modules inside it.
    fn visible(&self, m: &SourceModule, from: ModId, owner: ModId, public: bool) -> bool {
        public || is_within(m, from, owner)
    }

    /// Follows `path` from module `from`: what its last segment names in the value and the
    /// type namespace. With `glob`, the whole path names a module or an enum.
    fn walk(&self, m: &SourceModule, from: ModId, path: &[Ident], glob: bool) -> CResult<Step> {
        let Some((first, rest)) = path.split_first() else { return Ok(Step::Found(None, Some(Res::Module(from)))) };
        let mut cur = match first.name.as_str() {
            "crate" => Res::Module(0),
            "self" => Res::Module(from),
            "super" => match m.modules[from].parent {
                Some(p) => Res::Module(p),
                None => {
                    return Err(Diagnostic::error(first.span, "there are too many leading `super` keywords")
                        .label("the root module has no parent")
                        .into());
                }
            },
            name if rest.is_empty() && !glob => {
                // `use name;`: a name of this module (rare, and harmless).
                let v = self.values[from].get(name).map(|b| b.res);
                let t = self.types[from].get(name).map(|b| b.res);
                return Ok(if v.is_none() && t.is_none() { Step::External } else { Step::Found(v, t) });
            }
            name => match self.types[from].get(name) {
                Some(b) => b.res,
                None => return Ok(Step::External),
            },
        };
        let last = if glob { rest.len() + 1 } else { rest.len() };
        for (i, seg) in rest.iter().enumerate() {
            let is_last = i + 1 == last;
            match cur {
                Res::Module(md) => {
                    let v = self.values[md].get(&seg.name).filter(|b| self.visible(m, from, md, b.public));
                    let t = self.types[md].get(&seg.name).filter(|b| self.visible(m, from, md, b.public));
                    let private = self.values[md].get(&seg.name).or(self.types[md].get(&seg.name)).is_some() && v.is_none() && t.is_none();
                    if private {
                        return Err(private_error(m, seg, md));
                    }
                    if is_last {
                        return Ok(Step::Found(v.map(|b| b.res), t.map(|b| b.res)));
                    }
                    match t {
                        Some(b) => cur = b.res,
                        None => return Ok(Step::Found(None, None)),
                    }
                }
                Res::Item(e) => {
                    let Item::Enum(en) = &m.items[e] else { return Ok(Step::Found(None, None)) };
                    let Some(k) = en.variants.iter().position(|v| v.name.name == seg.name) else {
                        return Err(Diagnostic::error(seg.span, format!("no variant named `{}` in enum `{}`", seg.name, en.name.name))
                            .label("variant not found")
                            .help(format!(
                                "the variants of `{}` are: {}",
                                en.name.name,
                                en.variants.iter().map(|v| format!("`{}`", v.name.name)).collect::<Vec<_>>().join(", ")
                            ))
                            .into());
                    };
                    if !is_last {
                        return Ok(Step::Found(None, None));
                    }
                    return Ok(Step::Found(Some(Res::Variant(e, k)), None));
                }
                Res::Variant(..) => return Ok(Step::Found(None, None)),
            }
        }
        Ok(Step::Found(None, Some(cur)))
    }

    /// A plain name in the value namespace of module `from`.
    pub(crate) fn value(&self, from: ModId, name: &str) -> Option<Res> {
        self.values.get(from)?.get(name).map(|b| b.res)
    }

    /// A plain name in the type namespace of module `from`.
    pub(crate) fn type_name(&self, from: ModId, name: &str) -> Option<Res> {
        self.types.get(from)?.get(name).map(|b| b.res)
    }

    /// A path of two or more segments from module `from`: what it names as a value (an item
    /// or a variant) and as a type. `Ok((None, None))` if nothing.
    pub(crate) fn path(&self, m: &SourceModule, from: ModId, path: &[Ident]) -> CResult<(Option<Res>, Option<Res>)> {
        Ok(match self.walk(m, from, path, false)? {
            Step::Found(v, t) => (v, t),
            Step::External => (None, None),
        })
    }

    /// Every name in scope in module `from`, for suggestions.
    pub(crate) fn names(&self, from: ModId) -> impl Iterator<Item = &str> {
        self.values.get(from).into_iter().flat_map(|v| v.keys().map(String::as_str))
    }
}

/// Whether module `inner` is `outer` or inside it.
pub(crate) fn is_within(m: &SourceModule, inner: ModId, outer: ModId) -> bool {
    let mut cur = Some(inner);
    while let Some(c) = cur {
        if c == outer {
            return true;
        }
        cur = m.modules[c].parent;
    }
    false
}

fn private_error(m: &SourceModule, seg: &Ident, md: ModId) -> Box<Diagnostic> {
    let module = m.module_path(md);
    let module = if module.is_empty() { "crate".to_string() } else { module };
    Diagnostic::error(seg.span, format!("`{}` is private", seg.name))
        .label("private item")
        .note(format!("`{}` is declared in module `{module}` without `pub`", seg.name))
        .help(format!("make it public: `pub` before its declaration in `{module}`"))
        .into()
}
