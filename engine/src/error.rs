//! Errors for data the engine reads: files, positions, notation.

use std::path::Path;
use thiserror::Error;

/// Bad or unreadable input data, with where it was found ("file:line" or a field name).
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{place}: {message}")]
pub struct DataError {
    pub place: String,
    pub message: String,
}

impl DataError {
    pub fn new(place: impl Into<String>, message: impl Into<String>) -> Self {
        Self { place: place.into(), message: message.into() }
    }
}

/// A line of a named file, for building errors.
#[derive(Clone, Copy)]
pub(crate) struct Located<'a> {
    source: &'a str,
    line: usize,
}

impl<'a> Located<'a> {
    pub fn new(source: &'a str, line: usize) -> Self {
        Self { source, line }
    }
    pub fn err(&self, message: impl Into<String>) -> DataError {
        DataError::new(format!("{}:{}", self.source, self.line), message)
    }
}

pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, DataError> {
    std::fs::read(path).map_err(|e| DataError::new(path.display().to_string(), format!("cannot read: {e}")))
}

pub(crate) fn read_text(path: &Path) -> Result<String, DataError> {
    let bytes = read_bytes(path)?;
    String::from_utf8(bytes).map_err(|_| DataError::new(path.display().to_string(), "not UTF-8 text"))
}
