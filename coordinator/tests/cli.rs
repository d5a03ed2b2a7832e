//! The `coordinator` command line: clear errors and exit status 2 on bad input, and the admin
//! commands against a real Postgres database.

use std::process::{Command, Output};

fn coordinator(args: &[&str], db: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_coordinator"));
    c.args(args).env_remove("DATABASE_URL").env("RUST_LOG", "error");
    if let Some(db) = db {
        c.env("DATABASE_URL", db);
    }
    c.output().expect("run coordinator")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn pg() -> String {
    std::env::var("LEXHIVE_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

#[test]
fn no_database_is_a_clear_error() {
    let o = coordinator(&["migrate"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("DATABASE_URL"), "{}", stderr(&o));
    let o = coordinator(&["migrate"], Some("postgres://nobody:secret@127.0.0.1:1/none"));
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("cannot connect") && !e.contains("secret"), "password redacted: {e}");
}

#[test]
fn admin_commands_against_postgres() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let name = format!("lexhive_cli_{}", std::process::id());
    let admin = format!("{}/postgres", pg());
    rt.block_on(async {
        use sqlx::{Connection, Executor};
        let mut c = sqlx::PgConnection::connect(&admin).await.expect("Postgres reachable (see README)");
        c.execute(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}"))).await.unwrap();
        c.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).await.unwrap();
    });
    let db = format!("{}/{name}", pg());
    for _ in 0..2 {
        let o = coordinator(&["migrate"], Some(&db));
        assert!(o.status.success(), "migrate is repeatable: {}", stderr(&o));
    }
    let o = coordinator(&["token", "create", "--role", "researcher"], Some(&db));
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let token = out.lines().last().unwrap();
    assert!(token.len() == 64 && token.bytes().all(|c| c.is_ascii_hexdigit()), "{token}");
    let o = coordinator(&["token", "create", "--role", "worker"], Some(&db));
    assert_eq!(o.status.code(), Some(2), "worker tokens come from registering");

    // A corrupt leave table is refused, naming the file, and nothing is stored.
    let dir = std::env::temp_dir().join(format!("lexhive-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.klv2");
    std::fs::write(&bad, b"not a leave table").unwrap();
    let o = coordinator(&["artifact", "--role", "leaves", bad.to_str().unwrap()], Some(&db));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("broken.klv2"), "{}", stderr(&o));
    let o = coordinator(&["artifact", "--role", "colours", bad.to_str().unwrap()], Some(&db));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--role"));
    let good = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/english.dist");
    let o = coordinator(&["artifact", "--role", "distribution", good.to_str().unwrap()], Some(&db));
    assert!(o.status.success(), "{}", stderr(&o));
    let sha = String::from_utf8(o.stdout).unwrap().trim().to_string();
    let count: i64 = rt.block_on(async {
        let pool = sqlx::PgPool::connect(&db).await.unwrap();
        sqlx::query_scalar("SELECT count(*) FROM artifacts").fetch_one(&pool).await.unwrap()
    });
    assert_eq!(count, 1, "only the good artifact ({sha}) is stored");
    let o = coordinator(&["recompute"], Some(&db));
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 cells recomputed, 0 differed"));
    // `serve --lexica` naming no folder: one line that says so, before anything is stored.
    let nowhere = dir.join("no-such-lexica");
    let o = coordinator(&["serve", "--bind", "127.0.0.1:0", "--lexica", nowhere.to_str().unwrap()], Some(&db));
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--lexica") && e.contains("no such folder") && e.matches("no-such-lexica").count() == 1, "{e}");
    let _ = std::fs::remove_dir_all(&dir);
    rt.block_on(async {
        use sqlx::{Connection, Executor};
        let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
        c.execute(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).await.unwrap();
    });
}
