package state

// RememberedWithSubject counts the rows s's lastSeen holds that are tied to a customer (tests:
// there must be none).
func (s *Service) RememberedWithSubject() int {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	n := 0
	for _, e := range s.seen.m {
		if e.row.SubjectHash != "" {
			n++
		}
	}
	return n
}

// RememberedBodies returns the bodies s's lastSeen holds for spaceID, whatever their age (tests).
func (s *Service) RememberedBodies(spaceID string) []string {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	var out []string
	for k, e := range s.seen.m {
		if k.space == spaceID {
			out = append(out, string(e.row.Body))
		}
	}
	return out
}
