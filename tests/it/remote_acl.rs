//! The ACL recipes of docs/remote.md, run as written against a real redis-server: CI's user
//! stores, reads and purges its namespace; developers' user hits CI's entries and writes
//! nothing; neither touches another namespace.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use kache::cache::remote::RemoteStore;

use crate::redis_servers::{fresh_db, need, shared};
use crate::remote::{SECRET, SECRET_TEXT, compile_file, kache, kernel_file, local_stats, remote, said, warnings};

/// The `redis-cli ACL SETUSER` lines of docs/remote.md.
fn recipe() -> Vec<String> {
    let text = std::fs::read_to_string(crate::common::root().join("docs/remote.md")).unwrap();
    let lines: Vec<String> = text.lines().filter(|l| l.starts_with("redis-cli ACL SETUSER")).map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "docs/remote.md should give two ACL recipes");
    lines
}

#[test]
fn the_acl_recipes_of_the_docs_hold() {
    let Some(r) = shared() else { return };
    let Some(cli) = need("redis-cli") else { return };
    let db = fresh_db();
    let namespace = RemoteStore::new(remote(&r.url(db), SECRET, false)).unwrap().namespace().to_string();
    for line in recipe() {
        let line = line
            .replacen("redis-cli", &format!("{} -p {}", cli.display(), r.port), 1)
            .replace("NAMESPACE", &namespace)
            .replace("CI-PASSWORD", "ci-pw-0123")
            .replace("DEV-PASSWORD", "dev-pw-0123");
        let o = Command::new("sh").arg("-c").arg(&line).output().unwrap();
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "OK", "{line}: {}", said(&o));
    }
    let ci = format!("redis://kache-ci:ci-pw-0123@127.0.0.1:{}/{db}", r.port);
    let dev = format!("redis://kache-dev:dev-pw-0123@127.0.0.1:{}/{db}", r.port);
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "acl", 3);
    // CI stores.
    let ci_env = [("KACHE_REMOTE", ci.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT)];
    let o = compile_file(&work.path().join("ci"), &file, &ci_env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    assert_eq!(r.dump(db).len(), 3);
    // Developers, read-only, hit every one, without a warning.
    let dev_env = [("KACHE_REMOTE", dev.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_READONLY", "1")];
    let o = compile_file(&work.path().join("dev"), &file, &dev_env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    let s = local_stats(&work.path().join("dev"));
    assert_eq!((s["hits_remote"].as_u64(), s["remote_errors"].as_u64()), (Some(3), Some(0)), "{s}");
    let o = kache(work.path(), &dev_env).args(["remote", "stats"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("entries: 3\n"), "{}", said(&o));
    // A developer without KACHE_REMOTE_READONLY: the server refuses the writes, one warning.
    let other = kernel_file(work.path(), "acl-new", 2);
    let forgot = [("KACHE_REMOTE", dev.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT)];
    let o = compile_file(&work.path().join("forgot"), &other, &forgot);
    assert!(o.status.success() && warnings(&o).len() == 1, "{}", said(&o));
    assert_eq!(r.dump(db).len(), 3, "the read-only user wrote");
    let o = kache(work.path(), &forgot).args(["remote", "purge"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    // Neither user writes outside the namespace; the developer writes nowhere.
    for (user, pw) in [("kache-ci", "ci-pw-0123"), ("kache-dev", "dev-pw-0123")] {
        let mut c = redis::Client::open(format!("redis://{user}:{pw}@127.0.0.1:{}/{db}", r.port)).unwrap().get_connection().unwrap();
        let e = redis::cmd("SET").arg("kache:0123456789abcdef0123456789abcdef:v2:00").arg("x").query::<()>(&mut c).unwrap_err();
        assert_eq!(e.code(), Some("NOPERM"), "{user}: {e}");
        let e = redis::cmd("GET").arg("someone-elses-key").query::<Option<String>>(&mut c).unwrap_err();
        assert_eq!(e.code(), Some("NOPERM"), "{user}: {e}");
    }
    let mut c = redis::Client::open(dev.as_str()).unwrap().get_connection().unwrap();
    let e = redis::cmd("SET").arg(format!("kache:{namespace}:v2:00")).arg("x").query::<()>(&mut c).unwrap_err();
    assert_eq!(e.code(), Some("NOPERM"), "{e}");
    // CI purges.
    let o = kache(work.path(), &ci_env).args(["remote", "purge"]).output().unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("removed 3 entries"), "{}", said(&o));
    assert!(r.dump(db).is_empty());
}
