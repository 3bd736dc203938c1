package receipts

// InsertUnsealed exposes insertUnsealed to the external tests (to build batches of a known
// size).
var InsertUnsealed = insertUnsealed
