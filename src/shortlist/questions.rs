//! Does the user only ask a question?
//!
//! "Show me the albums I saved" reads almost like "Save albums for the current user", and
//! "What is my user name?" lands near `POST /users/{user_id}/playlists`. A request that
//! changes nothing needs no endpoint that changes something, and a write offered for a
//! question costs precision at best and a wrong change at worst. A request changes
//! something when one of its clauses starts with a verb of change ("Add ...", "... and
//! rename it"); a verb inside a clause ("the song now playing") describes, it does not
//! ask. Such requests weigh writes down ([`super::Options::question_write_weight`]).

use super::removal::asks_to_remove;

/// Stems of verbs that ask for a change, matched at the start of a clause's first word.
const CHANGE_STEMS: &[&str] = &[
    "add",
    "put",
    "sav",
    "creat",
    "make",
    "follow",
    "play",
    "paus",
    "skip",
    "set",
    "chang",
    "renam",
    "append",
    "mov",
    "turn",
    "increas",
    "decreas",
    "resum",
    "switch",
    "enabl",
    "disabl",
    "updat",
    "edit",
    "modif",
    "send",
    "post",
    "upload",
    "writ",
    "assign",
    "book",
    "order",
    "buy",
    "submit",
    "start",
    "stop",
    "restart",
    "shuffl",
    "repeat",
    "queue",
    "transfer",
    "like",
    "rate",
    "star",
    "subscrib",
    "invit",
    "shar",
    "publish",
    "replac",
    "insert",
    "attach",
    "link",
    "regist",
    "mark",
    "clos",
    "open",
    "lock",
    "unlock",
    "archiv",
    "approv",
    "reject",
    "merg",
    "reorder",
    "upgrad",
    "run",
    "trigger",
    "launch",
    "execut",
    "deploy",
    "scal",
    "restor",
    "import",
    "copy",
    "duplicat",
    "tag",
    "label",
    "pin",
    "mute",
    "unmute",
    "block",
    "unblock",
    "reply",
    "comment",
    "upvot",
    "vote",
    "accept",
    "declin",
    "confirm",
    "reset",
    "generat",
    "build",
    "schedul",
    "reschedul",
    "enrol",
    "join",
    "leave",
    "convert",
    "translat",
    "resiz",
    "crop",
    "transcod",
    "pay",
    "charg",
    "refund",
    "captur",
    "void",
    "issu",
    "reserv",
];

/// Words after which the next word may be a clause's verb: conjunctions, politeness, and
/// the words that lead to an infinitive or an imperative ("I want *to* add", "can *you*
/// add", "help *me* add", "*let's* add"). Not "I": "the albums I saved" describes.
const CLAUSE_OPENERS: &[&str] = &[
    "and", "then", "also", "please", "pls", "plz", "to", "you", "me", "let's", "lets", "let", "us",
];

/// Whether `query` asks for a change: it asks to remove something, or a clause starts with
/// a verb of change.
pub fn asks_to_change(query: &str) -> bool {
    if asks_to_remove(query) {
        return true;
    }
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut clause_start = true;
    for w in &words {
        let bare = w
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if clause_start && !bare.is_empty() {
            if CHANGE_STEMS.iter().any(|s| bare.starts_with(s)) {
                return true;
            }
            // "please add", "and then add": the opener keeps the clause open.
            clause_start = CLAUSE_OPENERS.contains(&bare.as_str());
        }
        if CLAUSE_OPENERS.contains(&bare.as_str()) {
            clause_start = true;
        }
        if w.ends_with([',', ';', ':', '.', '!', '?']) {
            clause_start = true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::asks_to_change;

    #[test]
    fn changes() {
        for q in [
            "Add album Mojito to my music library",
            "Make my first playlist private",
            "Pause playback, increase volume to 80 and switch to the next song",
            "Delete all songs from my first playlist",
            "Create a new playlist and name it Quiet",
            "please play something quiet",
            "Show me my playlists and then rename the first",
            "play me some quiet songs",
            "I want to add this song to my library",
            "I'd like to create a playlist",
            "Can you add Mojito to my music?",
            "Could you please skip this one",
            "help me create a playlist",
            "Let's follow Taylor Swift",
        ] {
            assert!(asks_to_change(q), "{q}");
        }
    }

    #[test]
    fn questions() {
        for q in [
            "Show me the albums I saved",
            "What is the name of the song I playing right now?",
            "Recommend me some tracks with the same genre of the music currently playing",
            "Who is my favorite artist?",
            "What is my user name?",
            "give me the number of movies directed by Sofia Coppola",
            "Can you tell me who directed Heat?",
            "I want to know my top artists",
            "",
        ] {
            assert!(!asks_to_change(q), "{q}");
        }
    }
}
