//! The codemap (`docs/ARCHITECTURE.md`) is a map of what exists: every file or folder it
//! names in backticks is there, every `worker` and `coordinator` command it names is one the
//! binaries take, and every module of a job kind it says each crate has is there. Also run by
//! `scripts/test-fast.sh`.

use std::path::Path;

fn codemap() -> String {
    std::fs::read_to_string(e2e::repo().join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md")
}

/// The text of every backticked span.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Whether `args` are subcommands of `cmd`, one level each (the first is the binary).
fn is_command(cmd: &clap::Command, args: &[&str]) -> bool {
    match args.split_first() {
        None => true,
        Some((sub, rest)) => cmd.find_subcommand(sub).is_some_and(|c| is_command(c, rest)),
    }
}

#[test]
fn every_path_the_codemap_names_exists() {
    let text = codemap();
    let repo = e2e::repo();
    let paths: Vec<&str> = spans(&text)
        .into_iter()
        .filter(|s| s.contains('/') && !s.contains("NAME") && !s.contains("..") && !s.starts_with("/"))
        .filter(|s| s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)))
        .collect();
    assert!(paths.len() > 40, "the codemap names files: {paths:?}");
    let missing: Vec<&&str> = paths.iter().filter(|p| !repo.join(p).exists()).collect();
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md names what does not exist: {missing:?}");
}

#[test]
fn every_command_the_codemap_names_exists() {
    let text = codemap();
    let mut checked = 0;
    for span in spans(&text) {
        let words: Vec<&str> = span.split_whitespace().collect();
        let cmd = match words.first() {
            Some(&"worker") => worker::cli::command(),
            Some(&"coordinator") => coordinator::cli::command(),
            _ => continue,
        };
        // The command's words, up to its first flag or placeholder.
        let subs: Vec<&str> = words[1..]
            .iter()
            .copied()
            .take_while(|w| !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .collect();
        assert!(is_command(&cmd, &subs), "docs/ARCHITECTURE.md names `{span}`, which is no command");
        checked += 1;
    }
    assert!(checked >= 10, "the codemap names commands: {checked}");
}

#[test]
fn each_crate_has_a_module_for_each_kind() {
    let repo = e2e::repo();
    for kind in shared::kinds::JobKind::ALL {
        let file = match kind.as_str() {
            "match" => "matches.rs".to_string(),
            name => format!("{name}.rs"),
        };
        for dir in ["shared/src/kinds", "coordinator/src/kinds", "worker/src/runners"] {
            let path = Path::new(dir).join(&file);
            assert!(repo.join(&path).exists(), "kind `{}` has no {}", kind.as_str(), path.display());
        }
    }
}
