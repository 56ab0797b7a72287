//! Facts about this process and the digest that names a build, below every layer that needs
//! them: `trust` compares owners with the user id and lock-file lines with digests, `plugin`
//! names its shadow folder by the user id and hashes what it stages, `worker` hands the digest
//! to its process as hex; files given on the command line are opened without blocking.

use std::{fmt::Write as _, path::Path};

use sha2::{Digest, Sha256};

/// The real user id of this process (0 where there is no such thing).
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    #[cfg(unix)]
    return unsafe { libc::getuid() };
    #[cfg(not(unix))]
    return 0;
}

/// SHA-256 of a file's bytes: the identity of a build.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Lowercase hex of a digest.
pub fn hex(digest: &[u8; 32]) -> String {
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The digest a 64-digit hex string (as [`hex`] writes it) stands for.
pub fn parse_hex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Opens `path` for reading without ever blocking: a FIFO with no writer would block a plain
/// `open` forever (and with it the start of `serve`, or the watcher). Symlinks are followed:
/// what counts is the file finally opened. For a regular file, `O_NONBLOCK` changes nothing
/// of how it reads.
pub fn open_no_block(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// What `fstat` says a file is, for messages: "a FIFO", "a folder", ...
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a folder"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// `path` opened for reading ([`open_no_block`]) if it is a regular file, with `fstat` of the
/// descriptor (what trust decisions use); else an `InvalidInput` error saying what it is
/// ("not a regular file (it is a FIFO)"). For the files given on the command line (a key, a
/// token file, a configuration) that are read whole at start-up.
pub fn open_regular_file(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let file = open_no_block(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file (it is {})", kind_of(&meta)),
        ));
    }
    Ok((file, meta))
}

/// Takes an exclusive `flock` on `file` without waiting: true if taken, false if another open
/// of the file holds one. The lock lasts until every descriptor of this open is closed, and
/// the kernel drops it when its process dies, however it dies: so it tells a live owner from
/// a dead one whatever became of its pid.
#[cfg(unix)]
pub fn try_lock(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for the whole call (`file` is borrowed); flock only acts
    // on it and touches no memory of ours.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_lock_is_held_against_every_other_open_until_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let first = std::fs::File::create(&path).unwrap();
        assert!(try_lock(&first).unwrap());
        let second = std::fs::File::open(&path).unwrap();
        assert!(!try_lock(&second).unwrap(), "held by the first open");
        drop(first);
        assert!(try_lock(&second).unwrap(), "released when closed");
    }

    /// Issue 37 item 18: a FIFO given as a file to read hung start-up; refused at once (as
    /// are folders and devices), a regular file reads as ever.
    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_opened_and_a_fifo_does_not_block() {
        use std::io::Read as _;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (path, kind) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/null"), "a character device"),
            (dir.path(), "a folder"),
        ] {
            let e = open_regular_file(path).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            assert_eq!(e.to_string(), format!("not a regular file (it is {kind})"));
        }
        let file = dir.path().join("key");
        std::fs::write(&file, "secret").unwrap();
        let (mut f, meta) = open_regular_file(&file).unwrap();
        assert_eq!(meta.len(), 6);
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        assert_eq!(text, "secret");
    }

    #[test]
    fn hashes_round_trip_through_hex() {
        let h: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(parse_hex(&hex(&h)), Some(h));
        assert_eq!(parse_hex("00"), None);
        assert_eq!(parse_hex(&"zz".repeat(32)), None);
        assert_eq!(
            hex(&digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
