//! Kernels across files: the module tree of a kernel crate. The root file's `mod name;` items
//! name `name.rs` or `name/mod.rs` beside it (as Rust does, `#[path = ".."]` too), whose own
//! `mod` items name files below them, and so on.
//!
//! The front end does no IO: a [`SourceLoader`] supplied by the caller reads each file (the
//! JIT's `load_file`, the command line and the prebuild step read the disk; [`MemorySources`]
//! holds files given as text). Every file read becomes one of the crate's
//! [`SourceFile`]s, with its own range of span offsets, so diagnostics point into the right
//! file.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::lang::ast::*;
use crate::lang::diag::{Diagnostic, Diagnostics};
use crate::lang::source::SourceFile;
use crate::span::Span;

use super::{Lower, PResult, decode, parse_file};

/// The most files one kernel crate may have.
pub const MAX_CRATE_FILES: usize = 256;

/// The deepest nesting of modules.
const MAX_MODULE_DEPTH: usize = 64;

/// Reads the files of a kernel crate for the front end, which does no IO itself.
pub trait SourceLoader {
    /// The bytes of the file at `path`, relative to the root file's folder with `/` between
    /// components (`common.rs`, `common/mod.rs`, `common/inner.rs`); `Ok(None)` if there is no
    /// such file, `Err` with a reason if it exists but cannot be read.
    fn load(&mut self, path: &str) -> Result<Option<Vec<u8>>, String>;
}

/// Module files given as text: `path` (relative to the root file's folder, `/`-separated) to
/// contents.
#[derive(Clone, Debug, Default)]
pub struct MemorySources {
    files: BTreeMap<String, Vec<u8>>,
}

impl MemorySources {
    /// No files.
    pub fn new() -> MemorySources {
        MemorySources::default()
    }

    /// Adds the file at `path` (`common.rs`, `util/mod.rs`).
    pub fn with(mut self, path: &str, text: impl Into<Vec<u8>>) -> MemorySources {
        self.files.insert(normalize(path).unwrap_or_else(|| path.to_string()), text.into());
        self
    }
}

impl SourceLoader for MemorySources {
    fn load(&mut self, path: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.files.get(path).cloned())
    }
}

/// A `mod name;` item whose file is still to be read.
#[derive(Debug)]
pub(super) struct PendingMod {
    /// The module it declares.
    pub(super) module: ModId,
    /// Its name, where it is written.
    pub(super) name: Ident,
    /// The folder its file is looked for in (relative, `/`-terminated or empty).
    pub(super) dir: String,
    /// The folder of the file that declares it (for `#[path]`).
    pub(super) file_dir: String,
    /// `#[path = ".."]`
    pub(super) path_attr: Option<String>,
}

/// Parses a kernel crate: the root file `name` (`bytes`) and, through `loader`, the files its
/// `mod` items name. Without a loader, `mod name;` is an error (inline `mod name { .. }` is
/// always fine).
pub fn parse_crate(name: &str, bytes: &[u8], loader: Option<&mut dyn SourceLoader>) -> Result<SourceModule, Diagnostics> {
    let root = match decode(name, bytes, 0) {
        Ok(f) => f,
        Err((file, d)) => return Err(Diagnostics::single(file, *d)),
    };
    parse_root(root, loader)
}

/// [`parse_crate`] from a root file already decoded.
pub(super) fn parse_root(root: Arc<SourceFile>, loader: Option<&mut dyn SourceLoader>) -> Result<SourceModule, Diagnostics> {
    let mut files = vec![root.clone()];
    let r = crate::stack::ensure(1 << 20, 16 << 20, || build(&root, loader, &mut files));
    r.map_err(|d| Diagnostics::in_files(files, vec![*d]))
}

fn build(root: &Arc<SourceFile>, mut loader: Option<&mut dyn SourceLoader>, files: &mut Vec<Arc<SourceFile>>) -> PResult<SourceModule> {
    let mut lower = Lower::default();
    lower.modules.push(ModuleDecl {
        name: String::new(),
        parent: None,
        public: true,
        span: Span::new(root.base(), root.end()),
        uses: Vec::new(),
    });
    // The file each module's items come from (inline modules: their parent's).
    let root_path = root.name().rsplit('/').next().unwrap_or(root.name()).to_string();
    let mut module_file: Vec<String> = vec![root_path];
    parse_file(root, &mut lower, true)?;
    let mut next = 0;
    loop {
        while module_file.len() < lower.modules.len() {
            let parent = lower.modules[module_file.len()].parent.unwrap_or(0);
            module_file.push(module_file[parent].clone());
        }
        if next >= lower.pending.len() {
            break;
        }
        let p = std::mem::replace(
            &mut lower.pending[next],
            PendingMod {
                module: 0,
                name: Ident { name: String::new(), span: Span::default() },
                dir: String::new(),
                file_dir: String::new(),
                path_attr: None,
            },
        );
        next += 1;
        let depth = depth_of(&lower.modules, p.module);
        if depth > MAX_MODULE_DEPTH {
            return Err(Diagnostic::error(p.name.span, "modules are nested too deeply")
                .label(format!("more than {MAX_MODULE_DEPTH} levels"))
                .into());
        }
        let (path, bytes) = read_module(&p, loader.as_deref_mut())?;
        // A file that is already an ancestor of this module includes itself.
        let mut cur = lower.modules[p.module].parent;
        while let Some(m) = cur {
            if module_file[m] == path {
                return Err(Diagnostic::error(p.name.span, format!("circular modules: `{path}` includes itself"))
                    .label(format!("`mod {}` names `{path}`, which is being read already", p.name.name))
                    .help("a module file cannot declare itself, directly or through its children; check the `#[path]` attributes")
                    .into());
            }
            cur = lower.modules[m].parent;
        }
        if files.len() >= MAX_CRATE_FILES {
            return Err(Diagnostic::error(p.name.span, "too many module files")
                .label(format!("kache reads at most {MAX_CRATE_FILES} files for one kernel source"))
                .into());
        }
        let base = files.last().map(|f| f.end() + 1).unwrap_or(0);
        let shown = match root.name().rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{path}"),
            None => path.clone(),
        };
        let file = match decode(&shown, &bytes, base) {
            Ok(f) => f,
            Err((f, d)) => {
                files.push(f);
                return Err(d);
            }
        };
        files.push(file.clone());
        module_file[p.module] = path.clone();
        // Children of `name.rs` are in `name/`; of `name/mod.rs` and of a `#[path]` file, in its
        // own folder.
        let own_dir = match path.rsplit_once('/') {
            Some((d, _)) => format!("{d}/"),
            None => String::new(),
        };
        lower.child_dir =
            if p.path_attr.is_none() && !path.ends_with("/mod.rs") { format!("{}{}/", p.dir, p.name.name) } else { own_dir.clone() };
        lower.file_dir = own_dir;
        lower.module = p.module;
        parse_file(&file, &mut lower, false)?;
    }
    let Lower { mut items, mut modules, uses, mut impls, .. } = lower;
    for (m, u) in uses {
        modules[m].uses.push(u);
    }
    check_unique(&items, &modules)?;
    super::generics::clear_shadowed_bounds(&mut items, &mut impls);
    let mut m = SourceModule { file: root.clone(), files: files.clone(), items, impls, modules, scopes: Default::default() };
    m.scopes = crate::lang::names::Scopes::build(&m)?;
    Ok(m)
}

fn depth_of(modules: &[ModuleDecl], mut m: ModId) -> usize {
    let mut d = 0;
    while let Some(p) = modules[m].parent {
        d += 1;
        m = p;
    }
    d
}

/// Finds and reads the file of a `mod name;` item: `(its path, its bytes)`.
fn read_module<'l>(p: &PendingMod, loader: Option<&mut (dyn SourceLoader + 'l)>) -> PResult<(String, Vec<u8>)> {
    let name = &p.name.name;
    let Some(loader) = loader else {
        return Err(Diagnostic::error(p.name.span, format!("`mod {name};` needs the file `{}{name}.rs`, and this source has no files around it", p.dir))
            .label("module file not available")
            .help("load the kernel from its file (`Jit::load_file`, `kache compile FILE`), give the module files with `Jit::load_sources`, or write the module inline: `mod name { .. }`")
            .into());
    };
    let read = |loader: &mut (dyn SourceLoader + 'l), path: &str| -> PResult<Option<Vec<u8>>> {
        loader.load(path).map_err(|e| {
            Diagnostic::error(p.name.span, format!("cannot read `{path}` for module `{name}`: {e}")).label("declared here").into()
        })
    };
    if let Some(attr) = &p.path_attr {
        let Some(path) = normalize(&format!("{}{attr}", p.file_dir)) else {
            return Err(Diagnostic::error(p.name.span, format!("`#[path = \"{attr}\"]` leaves the kernel's folder"))
                .label("here")
                .help("module files must be in the root file's folder or below it")
                .into());
        };
        return match read(loader, &path)? {
            Some(b) => Ok((path, b)),
            None => Err(Diagnostic::error(p.name.span, format!("file not found for module `{name}`"))
                .label(format!("`#[path]` names `{path}`, which does not exist"))
                .into()),
        };
    }
    let flat = format!("{}{name}.rs", p.dir);
    let nested = format!("{}{name}/mod.rs", p.dir);
    match (read(loader, &flat)?, read(loader, &nested)?) {
        (Some(b), None) => Ok((flat, b)),
        (None, Some(b)) => Ok((nested, b)),
        (Some(_), Some(_)) => {
            Err(Diagnostic::error(p.name.span, format!("file for module `{name}` found at both `{flat}` and `{nested}`"))
                .label("ambiguous")
                .help("delete or rename one of them to remove the ambiguity")
                .into())
        }
        (None, None) => Err(Diagnostic::error(p.name.span, format!("file not found for module `{name}`"))
            .label("no file for this module")
            .help(format!("to create the module `{name}`, create file `{flat}` or `{nested}` beside the kernel file"))
            .into()),
    }
}

/// `a/./b/../c.rs` as `a/c.rs`; `None` if it leaves the root folder or is absolute.
fn normalize(path: &str) -> Option<String> {
    if path.starts_with('/') || path.contains('\\') || path.contains(':') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join("/"))
}

/// No module defines a name twice in a namespace: functions, constants, statics and tuple and
/// unit structs share the value namespace; types, traits and modules the type namespace.
fn check_unique(items: &[Item], modules: &[ModuleDecl]) -> PResult<()> {
    let mut named: Vec<(ModId, bool, &str, Span)> = Vec::new();
    for i in items.iter().filter(|i| i.owner().is_none()) {
        if i.in_type_namespace() {
            named.push((i.module(), true, i.name().name.as_str(), i.name().span));
        }
        if i.in_value_namespace() {
            named.push((i.module(), false, i.name().name.as_str(), i.name().span));
        }
    }
    named.extend(modules.iter().filter_map(|m| Some((m.parent?, true, m.name.as_str(), m.span))));
    let mut seen: std::collections::HashMap<(ModId, bool, &str), Span> = std::collections::HashMap::new();
    for (m, types, name, span) in named {
        if let Some(prev) = seen.insert((m, types, name), span) {
            return Err(Diagnostic::error(span, format!("the name `{name}` is defined more than once"))
                .label("redefined here")
                .secondary(prev, "first defined here")
                .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalize_within_the_root_folder() {
        assert_eq!(normalize("a/./b/../c.rs").as_deref(), Some("a/c.rs"));
        assert_eq!(normalize("c.rs").as_deref(), Some("c.rs"));
        assert_eq!(normalize("../c.rs"), None);
        assert_eq!(normalize("/etc/passwd"), None);
    }
}
