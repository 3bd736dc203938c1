package spaces

import (
	"context"

	"github.com/agentmemory/agentmemory/models"
)

// Snapshot is what one request's key was authenticated against, read at one instant (issue 30
// §1): the key's space, the space's configuration revision (RevisionConfig) the key and the
// documents were read at, the features and object-types documents parsed (Documents), and
// whether it came from a KeyCache without reading the store. The hot paths take it as an argument
// (state.Service.WriteAt and ReadAt, notes.Service.BlockAt): their statements apply, and
// their receipts commit, only while the space's revision is still Revision; otherwise they
// answer ErrStaleConfig and KeyCache.Run reloads the key and runs them again.
//
// The zero Snapshot assumes nothing: the documents are read from the store and no revision is
// checked (callers outside the API's cached routes: tests, tools, workflows).
type Snapshot struct {
	SpaceID  string
	Revision int64
	Cached   bool
	hash     string // the key's hash, to reload it
	// read is what was read with the key, shared by every copy of the snapshot (a cached
	// one serves many requests), so a Snapshot is small to pass by value.
	read *snapshotRead
}

// snapshotRead is a Snapshot's documents as read, their parsed features and object types
// (or the error parsing them gave), and the documents as WithDocuments's context value,
// boxed once.
type snapshotRead struct {
	docs     []models.Document
	features Features
	types    ObjectTypes
	parseErr error
	pre      any
}

// newSnapshot is the Snapshot of the key of hash in spaceID, with docs read at revision rev;
// the documents are parsed once here (parseDocuments).
func newSnapshot(spaceID, hash string, rev int64, docs []models.Document) Snapshot {
	f, t, err := parseDocuments(docs)
	return Snapshot{SpaceID: spaceID, Revision: rev, hash: hash, read: &snapshotRead{
		docs: docs, features: f, types: t, parseErr: err, pre: prefetched{spaceID: spaceID, docs: docs}}}
}

// Assumes reports whether s holds a revision for spaceID that the hot paths must check (false
// for the zero Snapshot and for another space's).
func (s Snapshot) Assumes(spaceID string) bool {
	return s.hash != "" && s.SpaceID == spaceID
}

// ConfigArg is the revision the working-memory statements check for spaceID: Revision, or -1
// when s assumes none (Assumes).
func (s Snapshot) ConfigArg(spaceID string) int64 {
	if !s.Assumes(spaceID) {
		return -1
	}
	return s.Revision
}

// Documents returns spaceID's features and object types: s's, parsed when it was read, when s
// assumes spaceID; else d's, read from the store (Documents.Both).
func (s Snapshot) Documents(ctx context.Context, d Documents, spaceID string) (Features, ObjectTypes, error) {
	if !s.Assumes(spaceID) {
		return d.Both(ctx, spaceID)
	}
	if s.read.parseErr != nil {
		return Features{}, ObjectTypes{}, s.read.parseErr
	}
	return s.read.features, s.read.types, nil
}

// WithDocuments returns ctx carrying s's documents, so that the readers deeper in the request
// (Documents.Features, ObjectTypes, Get of the views) answer from them instead of the store.
// The zero Snapshot leaves ctx as it is.
func (s Snapshot) WithDocuments(ctx context.Context) context.Context {
	if s.hash == "" {
		return ctx
	}
	return context.WithValue(ctx, prefetchKey{}, s.read.pre)
}

// parseDocuments parses the features and object-types documents among docs (defaults when
// absent), as Documents.Both does.
func parseDocuments(docs []models.Document) (Features, ObjectTypes, error) {
	var f Features
	var t ObjectTypes
	for _, row := range docs {
		switch row.Name {
		case DocFeatures:
			v, err := parseCached(DocFeatures, row.Body, func(b []byte) (any, error) { return ParseFeatures(b) })
			if err != nil {
				return Features{}, ObjectTypes{}, err
			}
			f = v.(Features)
		case DocObjectTypes:
			v, err := parseCached(DocObjectTypes, row.Body, func(b []byte) (any, error) { return ParseObjectTypes(b) })
			if err != nil {
				return Features{}, ObjectTypes{}, err
			}
			t = v.(ObjectTypes)
		}
	}
	return f, t, nil
}
