//! A small notes store. Its state is declared with `state: Notes`, so the host carries the notes
//! from one build of this plugin to the next when the file is replaced.

use std::{collections::BTreeMap, sync::Mutex};

use serde::{Deserialize, Serialize};
use toolhost_plugin::prelude::*;

/// The notes, kept across hot reloads (serialized as JSON by the host hand-off).
#[derive(Default, Serialize, Deserialize)]
pub struct Notes {
    book: Mutex<Book>,
}

#[derive(Default, Serialize, Deserialize)]
struct Book {
    next_id: u64,
    notes: BTreeMap<u64, String>,
}

impl Notes {
    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        // A panicking tool cannot leave a `Book` half-updated (each update is one insert or
        // remove), so a poisoned lock is still consistent.
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The note to add.
#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The text of the note.
    pub text: String,
}

/// One stored note.
#[derive(Serialize, JsonSchema)]
pub struct Note {
    /// The note's id (use it with `delete_note`).
    pub id: u64,
    /// The text of the note.
    pub text: String,
}

/// Store a note and return it with its id.
#[tool(output_schema)]
pub fn add_note(AddArgs { text }: AddArgs, ctx: &Context) -> Result<Note, ToolError> {
    let mut book = ctx.state::<Notes>()?.book();
    book.next_id += 1;
    let id = book.next_id;
    book.notes.insert(id, text.clone());
    Ok(Note { id, text })
}

/// All notes, oldest first.
#[derive(Serialize, JsonSchema)]
pub struct NoteList {
    /// The notes, by increasing id.
    pub notes: Vec<Note>,
}

/// List every stored note, oldest first.
#[tool(read_only, output_schema)]
pub fn list_notes(_: NoArgs, ctx: &Context) -> Result<NoteList, ToolError> {
    let book = ctx.state::<Notes>()?.book();
    Ok(NoteList {
        notes: book
            .notes
            .iter()
            .map(|(&id, text)| Note {
                id,
                text: text.clone(),
            })
            .collect(),
    })
}

/// Which note to delete.
#[derive(Deserialize, JsonSchema)]
pub struct DeleteArgs {
    /// The id `add_note` returned.
    pub id: u64,
}

/// Delete a note by id.
#[tool(destructive, idempotent)]
pub fn delete_note(DeleteArgs { id }: DeleteArgs, ctx: &Context) -> Result<String, ToolError> {
    match ctx.state::<Notes>()?.book().notes.remove(&id) {
        Some(_) => Ok(format!("deleted note {id}")),
        None => Err(ToolError::new(format!("there is no note {id}"))),
    }
}

export_plugin! {
    name: "notes",
    tools: [add_note, list_notes, delete_note],
    state: Notes,
}
