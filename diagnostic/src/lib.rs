//! [`Diagnostic`]: what an error of a library crate tells the command line besides its
//! message. The CLI prints the [`hint`](Diagnostic::hint) as `hint: …` after a blank line
//! and points a CI annotation at the [`path`](Diagnostic::path).
//!
//! A crate of its own, below every library crate, so that each library's errors implement
//! the one trait themselves (as uv's `Hint` trait, one crate for every crate's errors) and
//! the CLI asks every error the same two questions instead of knowing each error type's
//! methods.
//!
//! Owns: the trait. Must not know: any error that implements it, or any product word.

use std::path::Path;

/// An error that can say what the user can do next and which file it is about.
pub trait Diagnostic: std::error::Error {
    /// What the user can do next, in words; `None` when the message says it all or the
    /// error has nothing better to offer (a caller may then word one from the cause).
    fn hint(&self) -> Option<&'static str>;

    /// The file or directory the error is about, when it names one.
    fn path(&self) -> Option<&Path> {
        None
    }
}
