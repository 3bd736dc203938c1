package migrations

// NoteContentHashV1 exposes noteContentHashV1 to the external tests.
var NoteContentHashV1 = noteContentHashV1
