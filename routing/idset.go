package routing

// idSet is a set of endpoint ids, kept as a slice while it is small. Most
// trie nodes end the pattern of one endpoint or a few: a map of one entry
// costs about 200 bytes of heap, a slice of one 16 (20 MB at 100,000
// endpoints with a pattern each). Past idSetFew ids it becomes a map, so
// that thousands of endpoints on one pattern still add and remove in
// constant time.
type idSet struct {
	few  []string
	many map[string]struct{}
}

const idSetFew = 8

func (s *idSet) add(id string) {
	if s.many != nil {
		s.many[id] = struct{}{}
		return
	}
	for _, x := range s.few {
		if x == id {
			return
		}
	}
	if len(s.few) < idSetFew {
		s.few = append(s.few, id)
		return
	}
	s.many = make(map[string]struct{}, 2*idSetFew)
	for _, x := range s.few {
		s.many[x] = struct{}{}
	}
	s.many[id] = struct{}{}
	s.few = nil
}

func (s *idSet) remove(id string) {
	if s.many != nil {
		delete(s.many, id)
		return
	}
	for i, x := range s.few {
		if x == id {
			last := len(s.few) - 1
			s.few[i] = s.few[last]
			s.few[last] = ""
			s.few = s.few[:last]
			if last == 0 {
				s.few = nil
			}
			return
		}
	}
}

func (s *idSet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	return len(s.few)
}

// appendTo appends the ids to dst and returns it.
func (s *idSet) appendTo(dst []string) []string {
	if s.many != nil {
		for id := range s.many {
			dst = append(dst, id)
		}
		return dst
	}
	return append(dst, s.few...)
}
