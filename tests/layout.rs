//! The house's layout, checked: no two source files import each other, directly
//! or around a circle, in `src/` or in `filters/src/`; no file there holds more
//! than 600 lines, no folder more than 25 source files.
//!
//! A file imports another when it names a path into it: a `use` item or a path
//! in code that starts at `crate::`, `super::`, `self::` or at one of its own
//! child modules. The path's deepest module is the file imported, so a `use
//! super::Store` imports the parent module's file even when `Store` is defined
//! elsewhere and re-exported there: a `mod.rs` that re-exports its children
//! must not be imported back by them. A `mod name;` declaration is not an
//! import; a path a serde attribute names in a string (`with = "a::b"`)
//! does. Only std is used here, so this test builds in seconds.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One crate's module tree: the module path (`["store", "keys"]`) of each file.
struct Crate {
    files: BTreeMap<Vec<String>, PathBuf>,
    /// The modules compiled only under `#[cfg(test)]`: their imports are not
    /// the house's.
    tests: BTreeSet<Vec<String>>,
}

impl Crate {
    fn read(root_file: &Path) -> Self {
        let mut krate = Self {
            files: BTreeMap::new(),
            tests: BTreeSet::new(),
        };
        walk(root_file, Vec::new(), true, false, &mut krate);
        krate
    }
}

/// Records `file` as module `path` and descends into its `mod name;` items.
fn walk(file: &Path, path: Vec<String>, owns_dir: bool, test: bool, krate: &mut Crate) {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = if owns_dir {
        file.parent().expect("a file has a folder").to_path_buf()
    } else {
        file.with_extension("")
    };
    for (child, child_test) in declared_modules(&strip(&text)) {
        let flat = dir.join(format!("{child}.rs"));
        let nested = dir.join(&child).join("mod.rs");
        let (child_file, child_owns) = if flat.exists() {
            (flat, false)
        } else if nested.exists() {
            (nested, true)
        } else {
            panic!("{}: no file for `mod {child};`", file.display());
        };
        let mut child_path = path.clone();
        child_path.push(child);
        walk(
            &child_file,
            child_path,
            child_owns,
            test || child_test,
            krate,
        );
    }
    if test {
        krate.tests.insert(path.clone());
    }
    krate.files.insert(path, file.to_path_buf());
}

/// Comments and literals blanked out (each byte a space, line breaks kept, so
/// offsets stay those of the text), so none of them can import anything.
fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, skipped: &str| {
        out.extend(skipped.bytes().map(|b| if b == b'\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        let len = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            rest.find("*/").map_or(rest.len(), |e| e + 2)
        } else if let Some(len) = raw_string_len(rest) {
            len
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(bytes.len()) - i
        } else if let Some(len) = char_literal_len(rest).filter(|_| bytes[i] == b'\'') {
            len
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
            continue;
        };
        blank(&mut out, &text[i..i + len]);
        i += len;
    }
    out
}

/// The paths serde attributes name in strings (`#[serde(with = "a::b")]`),
/// each at its offset.
fn serde_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut paths = Vec::new();
    for key in ["with = \"", "serialize_with = \"", "deserialize_with = \""] {
        let mut from = 0;
        while let Some(at) = text[from..].find(key) {
            let start = from + at + key.len();
            let Some(len) = text[start..].find('"') else {
                break;
            };
            let path: Vec<String> = text[start..start + len]
                .split("::")
                .map(String::from)
                .collect();
            if path.len() > 1 && text[..from + at].trim_end().ends_with(['(', ',']) {
                paths.push((start, path));
            }
            from = start + len;
        }
    }
    paths
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start.
fn raw_string_len(rest: &str) -> Option<usize> {
    let after_b = rest.strip_prefix('b').unwrap_or(rest);
    let after_r = after_b.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    Some(rest.len() - body.len() + end + close.len())
}

/// The length of a char literal (`'a'`, `'\n'`, `'\''`) at the start, if it is
/// one rather than a lifetime.
fn char_literal_len(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices().skip(1);
    let (_, first) = chars.next()?;
    if first == '\\' {
        let close = rest[2..].find('\'')?;
        return Some(close + 3);
    }
    let (at, next) = chars.next()?;
    (next == '\'').then_some(at + 1)
}

/// `mod name;` items (not inline `mod name { … }` blocks), each with whether
/// it is compiled only for tests.
fn declared_modules(code: &str) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    let mut after_cfg_test = false;
    for line in code.lines() {
        let cfg_test = after_cfg_test || line.contains("#[cfg(test)]");
        after_cfg_test = line.trim() == "#[cfg(test)]";
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "mod") else {
            continue;
        };
        let before_ok = words[..at].iter().all(|w| {
            w.starts_with("pub") || w.starts_with("#[") || w.ends_with(']') || w.ends_with(')')
        });
        if let Some(name) = words.get(at + 1).and_then(|w| w.strip_suffix(';')) {
            if before_ok {
                found.push((name.to_string(), cfg_test));
            }
        }
    }
    found
}

/// Every path a file names, at its offset: its `use` trees expanded, and the
/// paths in code.
fn named_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut paths = Vec::new();
    let mut from = 0;
    while let Some(at) = find_word(&code[from..], "use") {
        let start = from + at;
        let tail = &code[start + 3..];
        let Some(end) = tail.find(';') else { break };
        let spaced = tail[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        let tree: String = spaced
            .replace(" as ", "@")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let mut expanded = Vec::new();
        expand(&tree, &mut Vec::new(), &mut expanded);
        paths.extend(expanded.into_iter().map(|path| (start, path)));
        from = start + 3 + end;
    }
    paths.extend(path_tokens(code));
    paths
}

/// The inline `mod name { … }` blocks: their byte ranges, and whether each is
/// compiled only for tests.
fn inline_modules(code: &str) -> Vec<(std::ops::Range<usize>, bool)> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(at) = find_word(&code[from..], "mod") {
        let start = from + at;
        from = start + 3;
        let rest = code[from..].trim_start();
        let name_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if name_len == 0 || !rest[name_len..].trim_start().starts_with('{') {
            continue;
        }
        let open = from + (code[from..].len() - rest.len()) + name_len;
        let open = open + code[open..].find('{').expect("seen above");
        let mut depth = 0;
        let mut close = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let before = code[..start].trim_end();
        let before = ["pub(crate)", "pub(super)", "pub"]
            .iter()
            .find_map(|v| before.strip_suffix(v))
            .unwrap_or(before);
        let test = before.trim_end().ends_with("#[cfg(test)]");
        blocks.push((open..close, test));
    }
    blocks
}

/// The start of `word` standing alone (not inside a longer identifier).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let before = text[..start].chars().next_back().is_some_and(ident);
        let after = text[end..].chars().next().is_some_and(ident);
        if !before && !after {
            return Some(start);
        }
        from = end;
    }
    None
}

/// Expands a `use` tree (`a::{b, c::d}`) into its paths.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let (head, group) = match tree.find('{') {
        Some(open) => (
            &tree[..open],
            Some(&tree[open + 1..tree.rfind('}').unwrap_or(tree.len())]),
        ),
        None => (tree, None),
    };
    let depth = prefix.len();
    for segment in head.split("::").filter(|s| !s.is_empty()) {
        let name = segment.split('@').next().unwrap_or(segment);
        prefix.push(name.to_string());
    }
    match group {
        Some(inner) => {
            for part in split_top(inner) {
                expand(part, prefix, out);
            }
        }
        None => out.push(prefix.clone()),
    }
    prefix.truncate(depth);
}

/// Splits a group's members at the commas outside nested braces.
fn split_top(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The `a::b::c` paths written in code, each at its offset, as its segments
/// (not a visibility's path).
fn path_tokens(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut paths = Vec::new();
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !ident(bytes[i]) || (i > 0 && (ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < bytes.len() && ident(bytes[j]) {
                j += 1;
            }
            segments.push(code[start..j].to_string());
            if bytes.get(j) == Some(&b':')
                && bytes.get(j + 1) == Some(&b':')
                && bytes.get(j + 2).is_some_and(|c| ident(*c))
            {
                j += 2;
            } else {
                break;
            }
        }
        // A visibility (`pub(in crate::store)`) names a module, imports nothing.
        let visibility = code[..i].trim_end().ends_with("pub(in");
        if segments.len() > 1 && !visibility {
            paths.push((i, segments));
        }
        i = j.max(i + 1);
    }
    paths
}

/// The file a path imports, seen from module `here` and `inline` modules
/// deep inside its file: the path's deepest module (none for this same file).
fn resolve(krate: &Crate, here: &[String], inline: usize, path: &[String]) -> Option<PathBuf> {
    let mut module: Vec<String> = here.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            module.clear();
            rest = &rest[1..];
        }
        Some("self") if inline > 0 => return None,
        Some("self") => rest = &rest[1..],
        Some("super") => {
            let ups = rest.iter().take_while(|s| *s == "super").count();
            if ups <= inline {
                return None;
            }
            for _ in inline..ups {
                module.pop()?;
            }
            rest = &rest[ups..];
        }
        Some(_) if inline > 0 => return None,
        Some(first) => {
            let mut child = here.to_vec();
            child.push(first.to_string());
            if !krate.files.contains_key(&child) {
                return None;
            }
        }
        None => return None,
    }
    for segment in rest {
        let mut deeper = module.clone();
        deeper.push(segment.clone());
        if !krate.files.contains_key(&deeper) {
            break;
        }
        module = deeper;
    }
    krate.files.get(&module).cloned()
}

/// The circles (strongly connected components of two files or more).
fn circles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.visit(v);
        }
    }
    tarjan.found
}

/// Each file's imports of other files of the same crate, with the paths named.
fn imports(krate: &Crate) -> BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>> {
    let mut all = BTreeMap::new();
    for (module, file) in &krate.files {
        if krate.tests.contains(module) {
            continue;
        }
        let text = fs::read_to_string(file).expect("read above");
        let code = strip(&text);
        let blocks = inline_modules(&code);
        let mut mine: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
        for (at, path) in named_paths(&code).into_iter().chain(serde_paths(&text)) {
            let around = blocks.iter().filter(|(range, _)| range.contains(&at));
            if around.clone().any(|(_, test)| *test) {
                continue;
            }
            if let Some(target) = resolve(krate, module, around.count(), &path) {
                if &target != file {
                    mine.entry(target).or_default().insert(path.join("::"));
                }
            }
        }
        all.insert(file.clone(), mine);
    }
    all
}

/// Most lines a source file may hold, and most source files directly in a
/// folder: past them a room holds more than one concern.
const MAX_FILE_LINES: usize = 600;
const MAX_FOLDER_FILES: usize = 25;

#[test]
fn no_file_or_folder_outgrows_a_room() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = String::new();
    let mut dirs = vec![root.join("src"), root.join("filters/src")];
    let mut files_seen = 0;
    while let Some(dir) = dirs.pop() {
        let mut here = 0;
        for entry in fs::read_dir(&dir).expect("a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                here += 1;
                files_seen += 1;
                let lines = fs::read_to_string(&path)
                    .expect("a source file")
                    .lines()
                    .count();
                if lines > MAX_FILE_LINES {
                    let short = path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .display()
                        .to_string();
                    report.push_str(&format!("{short}: {lines} lines\n"));
                }
            }
        }
        if here > MAX_FOLDER_FILES {
            let short = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
            report.push_str(&format!("{short}/: {here} source files\n"));
        }
    }
    assert!(files_seen > 100, "the source tree was not read");
    assert!(
        report.is_empty(),
        "over {MAX_FILE_LINES} lines a file or {MAX_FOLDER_FILES} files a folder:\n{report}"
    );
}

#[test]
fn no_file_imports_itself_around_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = String::new();
    for lib in ["src/lib.rs", "filters/src/lib.rs"] {
        let krate = Crate::read(&root.join(lib));
        assert!(
            krate.files.len() > 10,
            "{lib}: the module tree was not read"
        );
        let named = imports(&krate);
        let edges = named
            .iter()
            .map(|(from, to)| (from.clone(), to.keys().cloned().collect()))
            .collect();
        for circle in circles(&edges) {
            report.push_str(&format!("a circle of {} files:\n", circle.len()));
            for from in &circle {
                for (to, paths) in &named[from] {
                    if circle.contains(to) {
                        let short =
                            |p: &PathBuf| p.strip_prefix(root).unwrap_or(p).display().to_string();
                        let names: Vec<&str> = paths.iter().map(String::as_str).take(3).collect();
                        report.push_str(&format!(
                            "  {} -> {}: {}\n",
                            short(from),
                            short(to),
                            names.join(", ")
                        ));
                    }
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "files import each other around circles:\n{report}"
    );
}

#[test]
fn the_reader_sees_the_imports_it_is_meant_to() {
    let code = strip(
        "use crate::a::{b::C, d};\n// use crate::x;\nlet s = \"crate::y::z\"; super::e::f();",
    );
    let attr = "#[serde(with = \"crate::q::r\")]";
    let named: Vec<String> = serde_paths(attr)
        .into_iter()
        .map(|(_, p)| p.join("::"))
        .collect();
    assert_eq!(named, ["crate::q::r"]);
    let text = "a /* b */ \"c\" d";
    assert_eq!(strip(text).len(), text.len(), "offsets are kept");
    let mut paths: Vec<Vec<String>> = named_paths(&code)
        .into_iter()
        .map(|(_, path)| path)
        .collect();
    paths.sort();
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert!(joined.contains(&"crate::a::b::C".to_string()), "{joined:?}");
    assert!(joined.contains(&"crate::a::d".to_string()), "{joined:?}");
    assert!(joined.contains(&"super::e::f".to_string()), "{joined:?}");
    assert!(
        !joined.iter().any(|p| p.contains('x') || p.contains('y')),
        "{joined:?}"
    );
    let mut files = BTreeMap::new();
    files.insert(vec![], PathBuf::from("lib.rs"));
    files.insert(vec!["a".to_string()], PathBuf::from("a/mod.rs"));
    files.insert(
        vec!["a".to_string(), "b".to_string()],
        PathBuf::from("a/b.rs"),
    );
    let krate = Crate {
        files,
        tests: BTreeSet::new(),
    };
    let here = ["a".to_string(), "b".to_string()];
    let to = |p: &str| {
        resolve(
            &krate,
            &here,
            0,
            &p.split("::").map(String::from).collect::<Vec<_>>(),
        )
    };
    assert_eq!(to("super::Store"), Some(PathBuf::from("a/mod.rs")));
    let segments: Vec<String> = ["super", "x"].map(String::from).to_vec();
    assert_eq!(
        resolve(&krate, &here, 1, &segments),
        None,
        "an inline module's super is its file"
    );
    let code = strip("fn a() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n");
    let blocks = inline_modules(&code);
    assert_eq!(blocks.len(), 1);
    assert!(blocks[0].1, "the block is compiled for tests only");
    assert_eq!(to("crate::a::b::C"), Some(PathBuf::from("a/b.rs")));
    assert_eq!(to("std::fmt"), None);
    let mut edges = BTreeMap::new();
    edges.insert(PathBuf::from("x"), BTreeSet::from([PathBuf::from("y")]));
    edges.insert(PathBuf::from("y"), BTreeSet::from([PathBuf::from("x")]));
    edges.insert(PathBuf::from("z"), BTreeSet::from([PathBuf::from("x")]));
    assert_eq!(
        circles(&edges),
        vec![vec![PathBuf::from("x"), PathBuf::from("y")]]
    );
}

/// The rungs of `src/`, top to bottom (ARCHITECTURE.md, *The parts*): a
/// module imports only from its own rung and the rungs below it. Within a
/// rung, the modules may lean either way (`stream` ◄─► `history`), each pair
/// of files still free of circles. A new top-level module is placed here.
const LADDER: &[&[&str]] = &[
    &["tail"],
    &["app"],
    &["mastodon", "serve", "http", "auth"],
    &["state"],
    &["demo", "notifier", "workers"],
    &["stream", "history"],
    &["visibility"],
    &[
        "rate_limits",
        "error",
        "jwt",
        "password",
        "embedded",
        "nofile",
    ],
    &["store"],
    &["model", "hides", "config", "text", "metrics", "shutdown"],
];

/// The top-level module of a file of `src/` (`store` for
/// `src/store/caches/cache.rs`), `None` for `lib.rs`.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib").then_some(name)
}

/// Where the imports of the files `part` places break `ladder` (a rung's
/// index: the higher, the lower the rung): each import of a part above
/// its importer's, and each part with no rung; and how many imports cross
/// between rungs (to check the imports were read). `through`, if given,
/// is a file no part may import through.
fn ladder_breaks(
    krate: &Crate,
    ladder: &[&[&str]],
    part: impl Fn(&Path) -> Option<String>,
    through: Option<&Path>,
) -> (String, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let short = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let rung = |name: &str| ladder.iter().position(|r| r.contains(&name));
    let mut report = String::new();
    let mut crossings = 0;
    for file in krate.files.values() {
        if let Some(name) = part(file) {
            if rung(&name).is_none() {
                report.push_str(&format!("`{name}` has no rung in the ladder\n"));
            }
        }
    }
    for (from, tos) in imports(krate) {
        let Some(a) = part(&from) else {
            continue;
        };
        for (to, paths) in tos {
            let names: Vec<&str> = paths.iter().map(String::as_str).take(3).collect();
            if through == Some(to.as_path()) {
                report.push_str(&format!(
                    "{} imports through {}: {}\n",
                    short(&from),
                    short(&to),
                    names.join(", ")
                ));
                continue;
            }
            let Some(b) = part(&to) else {
                continue;
            };
            let (Some(ra), Some(rb)) = (rung(&a), rung(&b)) else {
                continue;
            };
            if ra != rb {
                crossings += 1;
            }
            if rb < ra {
                report.push_str(&format!(
                    "{} (`{a}`) imports {} (`{b}`), a rung above: {}\n",
                    short(&from),
                    short(&to),
                    names.join(", ")
                ));
            }
        }
    }
    (report, crossings)
}

#[test]
fn every_module_imports_only_from_its_rung_and_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let krate = Crate::read(&src.join("lib.rs"));
    let (report, crossings) = ladder_breaks(&krate, LADDER, |f| top_module(&src, f), None);
    assert!(crossings > 100, "the imports were not read ({crossings})");
    assert!(report.is_empty(), "the ladder is broken:\n{report}");
}

/// The handler module of a file of `src/http/` (`statuses`, `groups` for
/// `src/http/groups/members.rs`): `None` for the router (`mod.rs`) and for
/// `shared/`, where the policy and parsing handlers share live.
fn handler_of(http: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(http).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "mod" && name != "shared").then_some(name)
}

#[test]
fn no_handler_imports_another() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let http = root.join("src/http");
    let krate = Crate::read(&root.join("src/lib.rs"));
    let mut report = String::new();
    let mut handlers = BTreeSet::new();
    for (from, tos) in imports(&krate) {
        let Some(a) = handler_of(&http, &from) else {
            continue;
        };
        handlers.insert(a.clone());
        for (to, paths) in tos {
            match handler_of(&http, &to) {
                Some(b) if b != a => {
                    let short = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
                    let names: Vec<&str> = paths.iter().map(String::as_str).take(3).collect();
                    report.push_str(&format!(
                        "{} imports the handler {}: {} (shared policy goes in src/http/shared/)\n",
                        short(&from),
                        short(&to),
                        names.join(", ")
                    ));
                }
                _ => {}
            }
        }
    }
    assert!(
        handlers.len() > 15,
        "the handlers were not read: {handlers:?}"
    );
    assert!(report.is_empty(), "handlers import each other:\n{report}");
}

/// The rungs of `src/store/`, top to bottom (ARCHITECTURE.md, *The
/// store*): a folder, or a file directly in `src/store`, imports only from
/// its own rung and the rungs below it. `mod.rs` declares and re-exports:
/// it is on no rung, and no file of the store imports through it (a path
/// through it would hide which folder it leans on).
const STORE_LADDER: &[&[&str]] = &[
    &["views"],
    &["entities"],
    &["outbox"],
    &["chains"],
    &["fanout"],
    &["layout"],
    &["writes"],
    &["events"],
    &["paging"],
    &["server"],
    &["handle"],
    &["log"],
    &["caches"],
    &["plumbing"],
];

/// The part of the store a file is in (`caches` for
/// `src/store/caches/cache.rs`, `paging` for `src/store/paging.rs`),
/// `None` for `src/store/mod.rs` and files outside the store.
fn store_part(store: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(store).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "mod").then_some(name)
}

#[test]
fn the_store_s_folders_import_only_down_their_ladder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let store = root.join("src/store");
    let krate = Crate::read(&root.join("src/lib.rs"));
    let through = store.join("mod.rs");
    let (report, crossings) = ladder_breaks(
        &krate,
        STORE_LADDER,
        |f| store_part(&store, f),
        Some(&through),
    );
    assert!(
        crossings > 100,
        "the store's imports were not read ({crossings})"
    );
    assert!(report.is_empty(), "the store's ladder is broken:\n{report}");
}

/// The files where the store's handle gets methods: its own (the
/// connection, caches, keys, the server, the log's shape) and its views.
const STORE_SURFACE: &[&str] = &["src/store/handle.rs", "src/store/views.rs"];

/// Most methods `Store` may have, over every `impl Store` block.
const MOST_STORE_METHODS: usize = 30;

/// The `fn` items directly inside each `impl Store { .. }` of `code` (a
/// stripped file): one entry per block, its functions' names.
fn store_impls(code: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "impl") {
        let after = rest[at + 4..].trim_start();
        rest = &rest[at + 4..];
        let Some(body) = after.strip_prefix("Store") else {
            continue;
        };
        let body = body.trim_start();
        if !body.starts_with('{') {
            continue;
        }
        let (mut depth, mut end) = (0usize, body.len());
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let (mut fns, mut depth) = (Vec::new(), 0usize);
        let inner = &body[1..end];
        let mut words = inner.split_inclusive(['{', '}', ' ', '\n', '(', '<']);
        while let Some(word) = words.next() {
            depth += word.matches('{').count();
            depth -= word.matches('}').count().min(depth);
            if depth == 0 && word.trim() == "fn" {
                if let Some(name) = words.next() {
                    fns.push(name.trim_end_matches(['(', '<', ' ']).to_string());
                }
            }
        }
        blocks.push(fns);
    }
    blocks
}

#[test]
fn the_store_s_methods_are_its_handle_s_and_its_views_under_thirty() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let krate = Crate::read(&root.join("src/lib.rs"));
    let mut methods = Vec::new();
    let mut elsewhere = Vec::new();
    for file in krate.files.values() {
        let code = strip(&fs::read_to_string(file).unwrap());
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .to_string();
        for block in store_impls(&code) {
            if STORE_SURFACE.contains(&rel.as_str()) {
                methods.extend(block.into_iter().map(|f| format!("{rel}: {f}")));
            } else {
                elsewhere.push(format!("{rel}: {}", block.join(", ")));
            }
        }
    }
    assert!(
        elsewhere.is_empty(),
        "`impl Store` outside {STORE_SURFACE:?}:\n{}",
        elsewhere.join("\n")
    );
    assert!(
        methods.len() > 10,
        "the store's methods were not read: {methods:?}"
    );
    assert!(
        methods.len() < MOST_STORE_METHODS,
        "Store has {} methods (at most {}):\n{}",
        methods.len(),
        MOST_STORE_METHODS - 1,
        methods.join("\n")
    );
}
