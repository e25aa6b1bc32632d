//! The hint map of `overtake-ufs` (the sched_ext scheduler in `ufs/`), seen from user space: a BPF
//! hash map from a waiting thread's id to the id of the thread holding what it waits for, pinned
//! in the BPF file system by the scheduler's loader. While a time-sensitive thread waits for a
//! lock, the scheduler runs the lock's holder as time-sensitive too (UFS's hints).
//!
//! Talks to the kernel with the `bpf(2)` system call directly (open a pinned object, update and
//! delete elements): three commands do not justify linking libbpf into every Overtake binary.
//! Must never block (each call is one system call on a hash map) or write a map whose key and
//! value are not the 4-byte thread ids it expects.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where `overtake-ufs` pins its hint map by default.
pub const DEFAULT_HINTS_PIN: &str = "/sys/fs/bpf/overtake_ufs/hints";

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_OBJ_GET: libc::c_long = 7;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_MAP_TYPE_HASH: u32 = 1;

/// Why the hint map cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HintMapError {
    /// Nothing is pinned there: `overtake-ufs` is not loaded, or pinned it elsewhere.
    #[error("no hint map at {0}: is overtake-ufs loaded (it pins its map there)?")]
    NotPinned(PathBuf),
    /// The kernel refused to open or describe it.
    #[error("cannot open the hint map at {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    /// Something else is pinned there.
    #[error(
        "{path} is not overtake-ufs's hint map (key {key} and value {value} bytes, want 4 and 4)"
    )]
    Shape { path: PathBuf, key: u32, value: u32 },
}

/// `union bpf_attr` for the element commands (map_fd, key, value, flags).
#[repr(C, align(8))]
#[derive(Default)]
struct ElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// `union bpf_attr` for BPF_OBJ_GET.
#[repr(C, align(8))]
#[derive(Default)]
struct ObjGetAttr {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
    path_fd: i32,
    _pad: u32,
}

/// `union bpf_attr` for BPF_OBJ_GET_INFO_BY_FD.
#[repr(C, align(8))]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// The start of `struct bpf_map_info`.
#[repr(C)]
#[derive(Default)]
struct MapInfo {
    map_type: u32,
    id: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    name: [u8; 16],
}

/// `union bpf_attr` for BPF_MAP_CREATE (the fields a plain hash map needs), tests only.
#[repr(C, align(8))]
#[derive(Default)]
struct CreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    _rest: [u32; 27],
}

/// Runs `bpf(cmd, attr)`; the result is a file descriptor or 0.
fn bpf<A>(cmd: libc::c_long, attr: &mut A) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, exclusively borrowed `#[repr(C)]` prefix of `union bpf_attr`
    // for `cmd`, and its size is passed, so the kernel reads and writes only within it; any
    // pointers inside it (keys, values, paths) point to memory the caller keeps alive for the
    // call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            std::ptr::from_mut(attr).cast::<libc::c_void>(),
            std::mem::size_of::<A>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn owned_fd(fd: libc::c_long) -> OwnedFd {
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// An open hint map.
#[derive(Debug)]
pub struct HintMap {
    fd: OwnedFd,
}

impl HintMap {
    /// Opens the map pinned at `path` (normally [`DEFAULT_HINTS_PIN`]) and checks its shape.
    pub fn open_pinned(path: &Path) -> Result<HintMap, HintMapError> {
        if !path.exists() {
            return Err(HintMapError::NotPinned(path.to_owned()));
        }
        let open = |source| HintMapError::Open {
            path: path.to_owned(),
            source,
        };
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| open(io::Error::from(io::ErrorKind::InvalidInput)))?;
        let mut attr = ObjGetAttr {
            pathname: c_path.as_ptr() as u64,
            ..ObjGetAttr::default()
        };
        let map = HintMap {
            fd: owned_fd(bpf(BPF_OBJ_GET, &mut attr).map_err(open)?),
        };
        let info = map.info().map_err(open)?;
        if info.map_type != BPF_MAP_TYPE_HASH || info.key_size != 4 || info.value_size != 4 {
            return Err(HintMapError::Shape {
                path: path.to_owned(),
                key: info.key_size,
                value: info.value_size,
            });
        }
        Ok(map)
    }

    /// A private map of the same shape, not pinned (tests; needs the privileges to make maps).
    pub fn create_private(max_entries: u32) -> io::Result<HintMap> {
        let mut attr = CreateAttr {
            map_type: BPF_MAP_TYPE_HASH,
            key_size: 4,
            value_size: 4,
            max_entries,
            ..CreateAttr::default()
        };
        Ok(HintMap {
            fd: owned_fd(bpf(BPF_MAP_CREATE, &mut attr)?),
        })
    }

    fn info(&self) -> io::Result<MapInfo> {
        let mut info = MapInfo::default();
        let mut attr = InfoAttr {
            bpf_fd: self.fd.as_raw_fd() as u32,
            info_len: std::mem::size_of::<MapInfo>() as u32,
            info: std::ptr::from_mut(&mut info) as u64,
        };
        bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr)?;
        Ok(info)
    }

    fn elem(&self, key: &u32, value: Option<&mut u32>) -> ElemAttr {
        ElemAttr {
            map_fd: self.fd.as_raw_fd() as u32,
            key: std::ptr::from_ref(key) as u64,
            value: value.map_or(0, |v| std::ptr::from_mut(v) as u64),
            ..ElemAttr::default()
        }
    }

    /// Says that thread `waiter` waits for something thread `holder` holds (replacing what it
    /// said before for `waiter`).
    pub fn set(&self, waiter: u32, holder: u32) -> io::Result<()> {
        let mut value = holder;
        let mut attr = self.elem(&waiter, Some(&mut value));
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }

    /// Says that thread `waiter` waits no more (nothing happens if it had no hint).
    pub fn clear(&self, waiter: u32) -> io::Result<()> {
        let mut attr = self.elem(&waiter, None);
        match bpf(BPF_MAP_DELETE_ELEM, &mut attr) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            other => other.map(drop),
        }
    }

    /// The holder `waiter` is said to wait for, if any.
    pub fn holder_of(&self, waiter: u32) -> io::Result<Option<u32>> {
        let mut value = 0u32;
        let mut attr = self.elem(&waiter, Some(&mut value));
        match bpf(BPF_MAP_LOOKUP_ELEM, &mut attr) {
            Ok(_) => Ok(Some(value)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_pin_names_the_path_and_the_scheduler() {
        let err = HintMap::open_pinned(Path::new("/nonexistent/overtake_ufs/hints"))
            .expect_err("nothing is pinned there");
        let msg = err.to_string();
        assert!(msg.contains("/nonexistent/overtake_ufs/hints"), "{msg}");
        assert!(msg.contains("overtake-ufs"), "{msg}");
        // A file that is not a BPF object: the kernel refuses it, and the error says where.
        let err = HintMap::open_pinned(Path::new("/proc/self/status")).expect_err("not a map");
        assert!(err.to_string().contains("/proc/self/status"), "{err}");
    }

    #[test]
    fn hints_are_set_replaced_and_cleared() {
        let map = match HintMap::create_private(16) {
            Ok(map) => map,
            // Making a map needs CAP_BPF; a machine that denies it cannot run this test.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EPERM | libc::EACCES | libc::ENOSYS)
                ) =>
            {
                eprintln!("skipped: this process may not make BPF maps ({e})");
                return;
            }
            Err(e) => panic!("creating a BPF map failed: {e}"),
        };
        let info = map.info().expect("info");
        assert_eq!((info.key_size, info.value_size), (4, 4));
        assert_eq!(map.holder_of(7).expect("lookup"), None);
        map.set(7, 11).expect("set");
        assert_eq!(map.holder_of(7).expect("lookup"), Some(11));
        map.set(7, 12).expect("replace");
        assert_eq!(map.holder_of(7).expect("lookup"), Some(12));
        map.clear(7).expect("clear");
        assert_eq!(map.holder_of(7).expect("lookup"), None);
        map.clear(7).expect("clearing twice is no error");
    }
}
