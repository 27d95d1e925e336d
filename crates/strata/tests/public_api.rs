//! The public surface of `strata` as users build it (no features), listed and compared
//! with `crates/strata/public-api.txt`, so any change to it shows in a diff: every public
//! module, type, field, variant, method (with its parameters' names), function, constant
//! and trait implementation reachable from the crate root.
//!
//! The listing is read from rustdoc's JSON output, built here in a target directory of
//! its own (`target/public-api/`). Rustdoc's JSON output is unstable: `RUSTC_BOOTSTRAP=1`
//! lets the stable toolchain give it, as tools such as `cargo public-api` do with a
//! nightly one. After a deliberate change, `STRATA_UPDATE_PUBLIC_API=1 cargo test -p
//! strata --test public_api` rewrites the listing; review its diff.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rustdoc JSON of `strata`'s library with default features.
fn rustdoc_json() -> Value {
    let target = workspace().join("target/public-api");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace())
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTDOCFLAGS")
        .args(["rustdoc", "-q", "-p", "strata", "--lib", "--"])
        .args(["-Z", "unstable-options", "--output-format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rustdoc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(target.join("doc/strata.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

struct Lister<'a> {
    index: &'a serde_json::Map<String, Value>,
    out: BTreeSet<String>,
    seen: BTreeSet<String>,
}

fn kind(item: &Value) -> (&str, &Value) {
    let inner = item["inner"].as_object().unwrap();
    let (k, v) = inner.iter().next().unwrap();
    (k.as_str(), v)
}

fn is_public(item: &Value) -> bool {
    item["visibility"] == "public"
}

fn params(sig: &Value) -> String {
    sig["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_str().unwrap_or("_").to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'a> Lister<'a> {
    fn item(&self, id: &Value) -> Option<&'a Value> {
        self.index.get(&id.to_string())
    }

    /// Lists the item `id`, reachable as `path::name`.
    fn walk(&mut self, id: &Value, path: &str, name: Option<&str>) {
        let Some(item) = self.item(id) else {
            return; // another crate's item
        };
        let (k, inner) = kind(item);
        let name = name.or(item["name"].as_str()).unwrap_or("");
        let p = if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}::{name}")
        };
        match k {
            "module" => {
                if !self.seen.insert(p.clone()) {
                    return;
                }
                self.out.insert(format!("mod {p}"));
                for child in inner["items"].as_array().unwrap() {
                    if self.item(child).is_some_and(is_public) {
                        self.walk(child, &p, None);
                    }
                }
            }
            "use" => {
                let target = &inner["id"];
                let as_name = inner["name"].as_str().unwrap_or("");
                if !target.is_null() && self.item(target).is_some() {
                    self.walk(target, path, Some(as_name));
                } else {
                    self.out.insert(format!(
                        "use {path}::{as_name} = {}",
                        inner["source"].as_str().unwrap_or("")
                    ));
                }
            }
            "struct" | "enum" | "union" | "trait" => self.type_like(k, inner, &p),
            "function" => {
                self.out
                    .insert(format!("fn {p}({})", params(&inner["sig"])));
            }
            other => {
                self.out.insert(format!("{other} {p}"));
            }
        }
    }

    fn type_like(&mut self, k: &str, inner: &'a Value, p: &str) {
        self.out.insert(format!("{k} {p}"));
        let ids = |v: &Value| v.as_array().cloned().unwrap_or_default();
        if let Some(fields) = inner["kind"]["plain"]["fields"].as_array() {
            for f in fields {
                if let Some(fi) = self.item(f).filter(|f| is_public(f)) {
                    let n = fi["name"].as_str().unwrap_or("");
                    self.out.insert(format!("field {p}.{n}"));
                }
            }
        }
        for v in ids(&inner["variants"]) {
            if let Some(vi) = self.item(&v) {
                let n = vi["name"].as_str().unwrap_or("");
                self.out.insert(format!("variant {p}::{n}"));
            }
        }
        if k == "trait" {
            for m in ids(&inner["items"]) {
                if let Some(mi) = self.item(&m) {
                    let n = mi["name"].as_str().unwrap_or("");
                    self.out.insert(format!("trait-item {p}::{n}"));
                }
            }
        }
        for im in ids(&inner["impls"]) {
            let Some(imp) = self.item(&im) else { continue };
            let (_, imp) = kind(imp);
            if imp["is_synthetic"] == true || !imp["blanket_impl"].is_null() {
                continue;
            }
            if imp["trait"].is_null() {
                for m in ids(&imp["items"]) {
                    let Some(mi) = self.item(&m).filter(|m| is_public(m)) else {
                        continue;
                    };
                    let n = mi["name"].as_str().unwrap_or("");
                    let line = match kind(mi) {
                        ("function", f) => format!("fn {p}::{n}({})", params(&f["sig"])),
                        (other, _) => format!("{other} {p}::{n}"),
                    };
                    self.out.insert(line);
                }
            } else {
                let t = imp["trait"]["path"].as_str().unwrap_or("");
                self.out.insert(format!("impl {t} for {p}"));
            }
        }
    }
}

#[test]
fn the_public_api_is_the_listed_one() {
    let doc = rustdoc_json();
    let mut lister = Lister {
        index: doc["index"].as_object().unwrap(),
        out: BTreeSet::new(),
        seen: BTreeSet::new(),
    };
    lister.walk(&doc["root"], "", None);
    let mut now = lister.out.into_iter().collect::<Vec<_>>().join("\n");
    now.push('\n');
    let listed = workspace().join("crates/strata/public-api.txt");
    if std::env::var_os("STRATA_UPDATE_PUBLIC_API").is_some() {
        std::fs::write(&listed, &now).unwrap();
        return;
    }
    let was = std::fs::read_to_string(&listed).unwrap_or_default();
    if was != now {
        let (was_set, now_set): (BTreeSet<&str>, BTreeSet<&str>) =
            (was.lines().collect(), now.lines().collect());
        let added: Vec<&&str> = now_set.difference(&was_set).collect();
        let removed: Vec<&&str> = was_set.difference(&now_set).collect();
        panic!(
            "the public API changed (STRATA_UPDATE_PUBLIC_API=1 rewrites {}):\nadded: {added:#?}\nremoved: {removed:#?}",
            listed.display()
        );
    }
    // The listing is of the build users get: none of the engine's internals.
    for internal in [
        "strata::comparator",
        "strata::testing",
        "strata::LevelIter",
        "strata::sstable",
    ] {
        assert!(
            !now.contains(&format!(" {internal}")),
            "{internal} is public"
        );
    }
}
