//! A small notes store. Its state is declared with `state: Notes`, so the host carries the notes
//! from one build of this plugin to the next when the file is replaced.
//!
//! Tools add, list and delete notes; each note is also a resource (`notes://{id}`, listed one
//! by one), `notes://index` lists them all, and the `summarize` prompt asks the model to
//! summarize one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toolhost_plugin::prelude::*;

/// The notes, kept across hot reloads (serialized as JSON by the host hand-off).
#[derive(Default, Serialize, Deserialize)]
pub struct Notes {
    book: Shared<Book>,
}

#[derive(Default, Serialize, Deserialize)]
struct Book {
    next_id: u64,
    notes: BTreeMap<u64, String>,
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
pub fn add_note(
    /// The text of the note.
    text: String,
    notes: &Notes,
    ctx: &Context,
) -> Json<Note> {
    let id = {
        let mut book = notes.book.lock();
        book.next_id += 1;
        let id = book.next_id;
        book.notes.insert(id, text.clone());
        id
    };
    // Clients that show the list or the index read them again.
    ctx.resource_list_changed();
    ctx.resource_updated(INDEX);
    Json(Note { id, text })
}

/// All notes, oldest first.
#[derive(Serialize, JsonSchema)]
pub struct NoteList {
    /// The notes, by increasing id.
    pub notes: Vec<Note>,
}

/// List every stored note, oldest first.
#[tool(read_only, output_schema)]
pub fn list_notes(notes: &Notes) -> Json<NoteList> {
    let book = notes.book.lock();
    let notes = book.notes.iter().map(|(&id, text)| Note {
        id,
        text: text.clone(),
    });
    Json(NoteList {
        notes: notes.collect(),
    })
}

/// Delete a note by id.
#[tool(destructive, idempotent)]
pub fn delete_note(
    /// The id `add_note` returned.
    id: u64,
    notes: &Notes,
    ctx: &Context,
) -> Result<String, String> {
    let removed = notes.book.lock().notes.remove(&id);
    if removed.is_none() {
        return Err(format!("there is no note {id}"));
    }
    ctx.resource_list_changed();
    ctx.resource_updated(&note::uri(id));
    ctx.resource_updated(INDEX);
    Ok(format!("deleted note {id}"))
}

const INDEX: &str = "notes://index";

/// A note's text, by id.
#[resource(uri = "notes://{id}", mime_type = "text/markdown", list = every_note)]
pub fn note(id: u64, notes: &Notes) -> Option<String> {
    notes.book.lock().notes.get(&id).cloned()
}

/// Each note, as `resources/list` shows it.
fn every_note(ctx: &Context) -> Result<Vec<ListedResource>, ToolError> {
    let book = ctx.state::<Notes>()?.book.lock();
    Ok(book
        .notes
        .iter()
        .map(|(&id, text)| {
            ListedResource::new(note::uri(id), format!("note {id}"))
                .description(first_line(text))
                .size(text.len() as u64)
        })
        .collect())
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// Every note, one line each, oldest first.
#[resource(uri = "notes://index", mime_type = "text/markdown")]
pub fn index(notes: &Notes) -> String {
    let book = notes.book.lock();
    if book.notes.is_empty() {
        return "No notes yet.\n".into();
    }
    book.notes
        .iter()
        .map(|(id, text)| format!("- [{id}]({}): {}\n", note::uri(id), first_line(text)))
        .collect()
}

/// Summarize one note.
#[prompt]
pub fn summarize(
    /// The id of the note to summarize.
    id: u64,
    /// At most this many words (default 30).
    words: Option<u32>,
    notes: &Notes,
) -> Result<Vec<PromptMessage>, PromptError> {
    let text = notes.book.lock().notes.get(&id).cloned();
    let text =
        text.ok_or_else(|| PromptError::invalid_argument(format!("there is no note {id}")))?;
    Ok(vec![PromptMessage::user(format!(
        "Summarize this note in at most {} words:\n\n{text}",
        words.unwrap_or(30)
    ))])
}

export_plugin! { state: Notes }

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolhost_plugin::testing::TestContext;

    use super::*;

    fn with_two_notes() -> TestContext {
        let ctx = TestContext::new().with_state(Notes::default());
        for text in ["# Groceries\nmilk", "Call Ada"] {
            let r = add_note::tool().call(json!({ "text": text }), &ctx);
            assert!(!r.is_error, "{r:?}");
        }
        ctx
    }

    #[test]
    fn notes_are_resources_listed_one_by_one_and_in_the_index() {
        let ctx = with_two_notes();
        let read = note::resource().read("notes://1", &ctx).unwrap();
        assert_eq!(read[0].as_text(), Some("# Groceries\nmilk"));
        assert_eq!(read[0].uri.as_deref(), Some("notes://1"));
        assert_eq!(read[0].mime_type.as_deref(), Some("text/markdown"));
        assert!(note::resource()
            .read("notes://3", &ctx)
            .unwrap_err()
            .is_not_found());

        let listed = note::resource().list_page(None, &ctx).unwrap().resources;
        let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["notes://1", "notes://2"]);
        assert_eq!(listed[0].description.as_deref(), Some("# Groceries"));

        let index = index::resource().read("notes://index", &ctx).unwrap();
        assert_eq!(
            index[0].as_text(),
            Some("- [1](notes://1): # Groceries\n- [2](notes://2): Call Ada\n")
        );
    }

    #[test]
    fn changes_are_announced() {
        let ctx = with_two_notes();
        let r = delete_note::tool().call(json!({"id": 1}), &ctx);
        assert!(!r.is_error, "{r:?}");
        let sent: Vec<(String, serde_json::Value)> = ctx.notifications();
        let updated = |uri: &str| {
            (
                "notifications/resources/updated".to_string(),
                json!({ "uri": uri }),
            )
        };
        let changed = (
            "notifications/resources/list_changed".to_string(),
            json!({}),
        );
        assert_eq!(sent.len(), 7, "{sent:?}");
        assert_eq!(
            sent[4..],
            [changed, updated("notes://1"), updated("notes://index")]
        );
    }

    #[test]
    fn the_summary_prompt_names_the_note_and_refuses_an_unknown_one() {
        let ctx = with_two_notes();
        let got = summarize::prompt().get(&[("id", "2")], &ctx).unwrap();
        assert_eq!(
            got.messages[0].text(),
            Some("Summarize this note in at most 30 words:\n\nCall Ada")
        );
        let e = summarize::prompt().get(&[("id", "9")], &ctx).unwrap_err();
        assert!(e.is_invalid_argument());
        assert_eq!(e.to_string(), "there is no note 9");
        let e = summarize::prompt().get(&[], &ctx).unwrap_err();
        assert_eq!(e.to_string(), "missing required argument `id`");
    }
}
