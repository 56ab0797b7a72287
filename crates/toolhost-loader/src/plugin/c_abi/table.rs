//! A C-ABI library's table of functions, read only as far as its own `size` says and checked.

use toolhost_c_abi as ffi;

use crate::plugin::LoadError;

pub(super) type InitFn = extern "C" fn(*const ffi::toolhost_init, *mut ffi::toolhost_buf) -> i32;
pub(super) type CallFn =
    extern "C" fn(u64, ffi::toolhost_str, ffi::toolhost_str, *mut ffi::toolhost_buf) -> i32;
pub(super) type FreeFn = extern "C" fn(ffi::toolhost_buf);
pub(super) type UnloadFn = extern "C" fn();
pub(super) type SaveFn = extern "C" fn(*mut ffi::toolhost_buf) -> i32;
pub(super) type RestoreFn = extern "C" fn(ffi::toolhost_str, *mut ffi::toolhost_buf) -> i32;

/// The functions of a library's `toolhost_plugin` table, copied out and checked at load (the
/// table itself is not read again).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table {
    pub(super) init: InitFn,
    pub(super) call: CallFn,
    pub(super) free: FreeFn,
    pub(super) unload: Option<UnloadFn>,
    pub(super) save_state: Option<SaveFn>,
    pub(super) restore_state: Option<RestoreFn>,
}

/// The smallest table of version 1: its size and version, `init`, `call` and `free`.
pub(super) const MIN_TABLE: usize =
    std::mem::offset_of!(ffi::toolhost_plugin, free) + size_of::<usize>();

impl Table {
    /// The table of a library exporting `toolhost_plugin_entry`, checked; `None` when it
    /// exports no such symbol.
    pub(crate) fn find(lib: &libloading::Library) -> Result<Option<Table>, LoadError> {
        // SAFETY: the symbol of this name is, by the ABI's contract (the header declares it),
        // a function of no arguments returning a pointer to the plugin's table; calling it
        // runs the plugin's code, as loading it did (see `Library::dlopen`).
        let entry = match unsafe { lib.get::<ffi::toolhost_entry_fn>(ffi::TOOLHOST_ENTRY_SYMBOL) } {
            Ok(sym) => *sym,
            Err(_) => return Ok(None),
        };
        Self::read(entry()).map(Some)
    }

    /// Reads a table at `p`, only the fields its own `size` says it has.
    fn read(p: *const ffi::toolhost_plugin) -> Result<Table, LoadError> {
        let refuse = |why: String| Err(LoadError::NotAPlugin(format!("its C-ABI table {why}")));
        if p.is_null() {
            return refuse("is NULL (toolhost_plugin_entry returned no table)".into());
        }
        if !p.is_aligned() {
            return refuse(format!("is misaligned (at {p:p})"));
        }
        let base = p.cast::<u8>();
        // SAFETY: `p` is non-null and aligned, and every table starts with its two `u32`s
        // (`size`, `abi_version`), which are read and nothing more.
        let (size, version) =
            unsafe { (base.cast::<u32>().read(), base.add(4).cast::<u32>().read()) };
        let size = size as usize;
        if version == 0 || version > ffi::TOOLHOST_ABI_VERSION {
            return Err(LoadError::Incompatible(format!(
                "it was built for version {version} of the C ABI; this host speaks version {} \
                 (build it with this toolhost's toolhost_plugin.h)",
                ffi::TOOLHOST_ABI_VERSION
            )));
        }
        if size < MIN_TABLE {
            return refuse(format!(
                "says it has {size} bytes, fewer than a version-1 table's {MIN_TABLE} (set \
                 `size` to sizeof(toolhost_plugin))"
            ));
        }
        /// The function at `offset` when the table's `size` covers it.
        ///
        /// SAFETY (of the callers): `base` points to a table of at least `size` bytes, as its
        /// own `size` field says; a field within it is read as the nullable function pointer
        /// the ABI defines there.
        unsafe fn field<F: Copy>(base: *const u8, size: usize, offset: usize) -> Option<F> {
            if offset + size_of::<Option<F>>() > size {
                return None;
            }
            // SAFETY: see the function's contract; `read_unaligned` since only the table's
            // start was checked for alignment.
            unsafe { base.add(offset).cast::<Option<F>>().read_unaligned() }
        }
        use std::mem::offset_of;
        type T = ffi::toolhost_plugin;
        // SAFETY: `base` is the table, of `size` bytes (see `field`); each offset is that of
        // the field of the named type.
        let (init, call, free, unload, save_state, restore_state) = unsafe {
            (
                field::<InitFn>(base, size, offset_of!(T, init)),
                field::<CallFn>(base, size, offset_of!(T, call)),
                field::<FreeFn>(base, size, offset_of!(T, free)),
                field::<UnloadFn>(base, size, offset_of!(T, unload)),
                field::<SaveFn>(base, size, offset_of!(T, save_state)),
                field::<RestoreFn>(base, size, offset_of!(T, restore_state)),
            )
        };
        let (Some(init), Some(call), Some(free)) = (init, call, free) else {
            let missing = if init.is_none() {
                "init"
            } else if call.is_none() {
                "call"
            } else {
                "free"
            };
            return refuse(format!(
                "has no `{missing}` (init, call and free are required)"
            ));
        };
        Ok(Table {
            init,
            call,
            free,
            unload,
            save_state,
            restore_state,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table is read only as far as its own size says, and its required functions must be
    /// there.
    #[test]
    fn tables_are_read_by_their_size() {
        extern "C" fn init(_: *const ffi::toolhost_init, _: *mut ffi::toolhost_buf) -> i32 {
            0
        }
        extern "C" fn call(
            _: u64,
            _: ffi::toolhost_str,
            _: ffi::toolhost_str,
            _: *mut ffi::toolhost_buf,
        ) -> i32 {
            0
        }
        extern "C" fn free(_: ffi::toolhost_buf) {}
        extern "C" fn unload() {}
        let mut t = ffi::toolhost_plugin {
            size: MIN_TABLE as u32,
            abi_version: 1,
            init: Some(init),
            call: Some(call),
            free: Some(free),
            unload: Some(unload),
            save_state: None,
            restore_state: None,
        };
        let read = |t: &ffi::toolhost_plugin| Table::read(t).map_err(|e| e.to_string());
        // `unload` lies past the size this table claims: not read.
        assert!(read(&t).unwrap().unload.is_none());
        t.size = size_of::<ffi::toolhost_plugin>() as u32;
        assert!(read(&t).unwrap().unload.is_some());
        t.free = None;
        assert!(
            read(&t).unwrap_err().contains("has no `free`"),
            "{}",
            read(&t).unwrap_err()
        );
        t.free = Some(free);
        t.size = 12;
        assert!(read(&t).unwrap_err().contains("fewer than"));
        t.size = size_of::<ffi::toolhost_plugin>() as u32;
        t.abi_version = 2;
        assert!(read(&t).unwrap_err().contains("version 2 of the C ABI"));
        assert!(Table::read(std::ptr::null()).is_err());
    }
}
