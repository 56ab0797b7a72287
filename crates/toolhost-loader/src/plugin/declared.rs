//! The name a plugin library carries in its file (the `NAME_SYMBOL` export `export_plugin!`
//! writes), read without loading it. The loader runs a library's constructors as soon as it
//! maps it, so where a library runs, and with which settings, must be decided from the file
//! alone: by this name.

use object::{Object, ObjectSection, ObjectSymbol, ReadRef};
use toolhost_plugin::abi::NAME_SYMBOL;

use super::{LoadError, Manifest, NotALibrary, Staged};
use crate::model::{check_name, ManifestError, MAX_QUALIFIED_NAME};

impl Staged {
    /// The plugin name this copy carries in its file (`None`: built before libraries did),
    /// read from its headers and symbol table without loading it. The copy is checked first
    /// (`Staged::check_complete`, once: the name is kept, so a second call checks nothing).
    pub fn declared_name(&self) -> Result<Option<String>, LoadError> {
        if let Some(known) = self.declared.get() {
            return Ok(known.clone());
        }
        self.check_complete()?;
        let file = self.open_read().map_err(NotALibrary::Unreadable)?;
        let name = read(&object::ReadCache::new(file)).map_err(LoadError::NotAPlugin)?;
        Ok(self.declared.get_or_init(|| name).clone())
    }
}

/// The name a loaded plugin declared must be the one its file carries (`exported`), by which
/// its settings were found before it ran.
pub fn check(exported: Option<&str>, manifest: &Manifest) -> Result<(), LoadError> {
    match exported {
        Some(exported) if exported != manifest.name => {
            Err(LoadError::Invalid(ManifestError::NameMismatch {
                exported: exported.to_string(),
                declared: manifest.name.clone(),
            }))
        }
        _ => Ok(()),
    }
}

/// The plugin name exported by the library in `data`; `None` when it exports none (built
/// against a toolhost-plugin from before the symbol). `Err` says why an export is unusable.
/// `data` must already parse as a whole library (`check_complete`).
pub(super) fn read<'data, R: ReadRef<'data>>(data: R) -> Result<Option<String>, String> {
    let file = object::File::parse(data).map_err(|e| e.to_string())?;
    // Mach-O prefixes C symbol names with `_`.
    let wanted = |name: &[u8]| {
        name == NAME_SYMBOL.as_bytes() || name.strip_prefix(b"_") == Some(NAME_SYMBOL.as_bytes())
    };
    // An ELF export is in the dynamic symbol table, which is short; Mach-O has only the one
    // table (a debug build's full ELF table can be megabytes: not read).
    let exports = match file.format() {
        object::BinaryFormat::Elf => None,
        _ => Some(file.symbols()),
    };
    let Some(symbol) = file
        .dynamic_symbols()
        .chain(exports.into_iter().flatten())
        .find(|s| s.is_definition() && s.name_bytes().is_ok_and(wanted))
    else {
        return Ok(None);
    };
    let unusable = |why: &str| format!("its exported name ({NAME_SYMBOL}) {why}");
    let section = symbol
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .ok_or_else(|| unusable("lies in no section"))?;
    let (offset, size) = section
        .file_range()
        .ok_or_else(|| unusable("has no bytes in the file"))?;
    let into = symbol
        .address()
        .checked_sub(section.address())
        .filter(|into| *into < size)
        .ok_or_else(|| unusable("lies outside its section"))?;
    // The name, its NUL, and no more than a name can need.
    let len = (size - into).min(MAX_QUALIFIED_NAME as u64 + 1);
    let bytes = data
        .read_bytes_at(offset + into, len)
        .map_err(|_| unusable("cannot be read"))?;
    let end = bytes
        .iter()
        .position(|b| *b == 0)
        .ok_or_else(|| unusable("does not end"))?;
    let name = std::str::from_utf8(&bytes[..end]).map_err(|_| unusable("is not UTF-8"))?;
    check_name("plugin", name).map_err(|e| unusable(&format!("is invalid: {e}")))?;
    Ok(Some(name.to_string()))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_library_names_itself_in_its_file() {
        use toolhost_test_support::{lib_file, Build};
        let calc = std::fs::read(Build::workspace().run().join(lib_file("calc"))).unwrap();
        assert_eq!(read(&*calc), Ok(Some("calc".to_string())));
    }

    #[test]
    fn a_library_without_the_export_has_no_name() {
        // This test binary exports nothing of the kind.
        let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(read(&*own), Ok(None));
    }
}
