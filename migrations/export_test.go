package migrations

// NoteContentHashV1 exposes noteContentHashV1 to the external tests.
var NoteContentHashV1 = noteContentHashV1

// BackfillNoteContentHash exposes backfillNoteContentHash to the external tests.
var BackfillNoteContentHash = backfillNoteContentHash
