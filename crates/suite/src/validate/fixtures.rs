//! The fixtures root and checks of the fixture paths a suite references.

use std::path::{Component, Path, PathBuf};

use super::super::ctx::Ctx;
use super::super::error::SuiteError;
use super::super::error::SuiteErrorKind as K;
use super::checks::R;

/// The fixtures root and fixture-path checks.
pub(super) struct Fixtures {
    /// Absolute; canonical when it exists.
    pub(super) root: PathBuf,
    exists: bool,
}

pub(super) enum Want {
    File,
    Dir,
}

impl Fixtures {
    /// `fixtures_dir` (relative to the suite file's directory), else `<dir>/fixtures`,
    /// else `<dir>/../fixtures` when only that exists (docs/suite.md).
    pub(super) fn locate(ctx: &Ctx, origin: &Path, fixtures_dir: Option<&str>) -> R<Fixtures> {
        let abs = std::path::absolute(origin).map_err(|e| {
            SuiteError::plain(
                ctx.file.clone(),
                K::Io,
                format!("cannot resolve the suite's directory: {e}"),
            )
        })?;
        let dir = abs.parent().map(Path::to_path_buf).unwrap_or_default();
        let root = match fixtures_dir {
            Some(fd) => {
                let p = dir.join(fd);
                if !p.is_dir() {
                    return Err(ctx.at_value(
                        "fixtures_dir",
                        K::Fixture,
                        format!("`fixtures_dir` `{fd}` is not a directory (relative to the suite file's directory)"),
                    ));
                }
                p
            }
            None => {
                let here = dir.join("fixtures");
                match dir.parent().map(|p| p.join("fixtures")) {
                    Some(up) if !here.exists() && up.exists() => up,
                    _ => here,
                }
            }
        };
        Ok(match root.canonicalize() {
            Ok(c) => Fixtures {
                root: c,
                exists: true,
            },
            Err(_) => Fixtures {
                root,
                exists: false,
            },
        })
    }

    /// Checks that `rel` names an existing file (or directory) under the root, without
    /// `..`, absolute paths or symlinks leading out; returns `root/rel`.
    pub(super) fn path(&self, ctx: &Ctx, at: &str, rel: &str, want: Want) -> R<PathBuf> {
        let key = at.rsplit('.').next().unwrap_or(at);
        let p = Path::new(rel);
        if rel.is_empty() {
            return Err(ctx.at_value(at, K::InvalidValue, format!("`{key}` is empty")));
        }
        if p.components()
            .any(|c| matches!(c, Component::RootDir | Component::Prefix(_)))
        {
            return Err(ctx
                .at_value(
                    at,
                    K::Fixture,
                    format!("`{key}` must be relative to the fixtures root"),
                )
                .with_hint(Some(format!("fixtures root: {}", self.root.display()))));
        }
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(ctx.at_value(
                at,
                K::Fixture,
                format!("`{key}` must stay under the fixtures root: `..` is not allowed"),
            ));
        }
        let full = self.root.join(p);
        let fixtures_hint = || {
            rel.strip_prefix("fixtures/")
                .map(|r| format!("paths are relative to the fixtures root; did you mean `{r}`?"))
        };
        let meta = match std::fs::metadata(&full) {
            Ok(m) => m,
            Err(_) => {
                let what = if self.exists {
                    format!("the fixtures root {}", self.root.display())
                } else {
                    format!("{} (which does not exist)", self.root.display())
                };
                return Err(ctx
                    .at_value(at, K::Fixture, format!("`{rel}` not found under {what}"))
                    .with_hint(fixtures_hint()));
            }
        };
        match want {
            Want::File if !meta.is_file() => {
                return Err(ctx.at_value(at, K::Fixture, format!("`{rel}` is not a file")));
            }
            Want::Dir if !meta.is_dir() => {
                return Err(ctx.at_value(at, K::Fixture, format!("`{rel}` is not a directory")));
            }
            _ => {}
        }
        match full.canonicalize() {
            Ok(c) if c.starts_with(&self.root) => Ok(full),
            _ => Err(ctx.at_value(
                at,
                K::Fixture,
                format!("`{rel}` leads outside the fixtures root (symlink)"),
            )),
        }
    }
}
