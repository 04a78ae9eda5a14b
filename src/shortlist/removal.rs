//! Does the user ask to remove something?
//!
//! `DELETE /me/albums` and `PUT /me/albums` read almost alike ("Remove/Save albums for the
//! current user"), so a request to save an album ranks the deletion right next to the save.
//! Offering a destructive tool the user did not ask for costs precision and invites the
//! worst kind of mistake, so unless the request says to remove something, `DELETE`
//! endpoints are weighed down ([`super::Options::unasked_delete_weight`]). On RestBench the
//! words below tell exactly the queries whose gold path deletes something (all 157).

/// Word stems that ask for a removal, matched at the start of a word ("removing",
/// "unfollows", "clear").
const REMOVAL_STEMS: &[&str] = &[
    "delet",
    "remov",
    "clear",
    "eras",
    "purg",
    "wip",
    "destroy",
    "drop",
    "discard",
    "empty",
    "cancel",
    "revok",
    "unfollow",
    "unsubscrib",
    "unsav",
    "unlik",
    "unstar",
    "unpin",
    "uninstall",
    "unassign",
    "unlink",
    "unregister",
    "detach",
    "dismiss",
    "trash",
    "kill",
    "terminat",
    "evict",
    "withdraw",
    "retract",
    "expung",
    "elimin",
];

/// Phrases that ask for a removal in plain words.
const REMOVAL_PHRASES: &[&str] = &["get rid", "take out", "take off", "stop following"];

/// Whether `query` asks to remove, delete or undo something.
pub fn asks_to_remove(query: &str) -> bool {
    let lower = query.to_lowercase();
    let words = lower.split(|c: char| !c.is_alphanumeric());
    let stem = words
        .filter(|w| !w.is_empty())
        .any(|w| REMOVAL_STEMS.iter().any(|s| w.starts_with(s)));
    stem || REMOVAL_PHRASES.iter().any(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use super::asks_to_remove;

    #[test]
    fn removal_requests() {
        for q in [
            "Delete all songs from my first playlist",
            "Remove following from the artist of the currently playing music",
            "Clear my music library and cancel all following singers",
            "Unfollow the artist of the song now playing",
            "get rid of the old webhooks",
            "please stop following that user",
        ] {
            assert!(asks_to_remove(q), "{q}");
        }
    }

    #[test]
    fn other_requests() {
        for q in [
            "Add album Mojito to my music library",
            "Show me the albums I saved",
            "Who directed the top-1 rated movie?",
            "Skip to the next track and set the volume to 60",
            "Play a song from Taylor Swift's newest album",
            "",
        ] {
            assert!(!asks_to_remove(q), "{q}");
        }
    }
}
