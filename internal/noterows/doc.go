// Package noterows holds the row-level primitives of agent memory that both internal/notes
// (agents' writes and reads, AM-1..AM-7) and internal/proposals (the proposal lifecycle,
// AM-8, AM-9) need, so that neither reaches into the other for them (issue 30 §2):
//
//   - column codecs: how tags, kinds lists and evidence are stored (EncodeTags, DecodeTags,
//     EvidenceOf, EvidenceColumns);
//   - sealing of note and proposal text under their own keys (issue 29 §1: SealText,
//     OpenText, SealProposal, OpenProposals, OpenNotes, DestroyKeys);
//   - the limits: the cap of active notes per source (CheckCap, CheckCapExact, CountActive)
//     and the hourly rate (RateLimited);
//   - idempotency records (note_requests: IdemHash, HashRequest, RecallProposal,
//     RememberProposal);
//   - the note insert (InsertNote, CountAndInsert) and the lookups both doors make
//     (Features, SourceVendor).
//
// It imports neither notes nor proposals (both import it; proposals also imports notes,
// the only arrow between those two). It never imports gin or Temporal; errors are
// *fault.Error or wrapped database errors.
package noterows
