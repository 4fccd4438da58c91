package stats

import (
	"fmt"
	"slices"
)

// A TemplateSet is several templates that components make under the same
// scope, one after another: a cluster's traffic stats, its load
// balancer's and its own under "cluster.<name>.". Scope.NewBlocks makes
// them as one block of their joined stats, so the scope's node gets its
// sorted child list in one merge instead of one per template (each merge
// copied the list the templates before had made, and compared every stat
// in it again), and its prefix is resolved once. The blocks it returns
// are those Scope.NewBlock of each template would return, so each
// component still reads its own stats by its own positions.
//
// A TemplateSet is immutable.
type TemplateSet struct {
	joined *Template
	parts  []*Template
	// start is each part's first position in joined; first is each
	// part's first rank in each slab, added to the joined block's base.
	start []int
	first [][numBlockSlabs]uint32
}

// NewTemplateSet returns the set of templates ts, made in that order.
// The templates must not share a name of one kind (that would be one
// stat, which two components cannot both own as a fresh one): a set
// that does is a programming error, and NewTemplateSet panics.
func NewTemplateSet(ts ...*Template) *TemplateSet {
	set := &TemplateSet{parts: slices.Clone(ts)}
	var all []TemplateStat
	var counts [numBlockSlabs]uint32
	for _, t := range ts {
		set.start = append(set.start, len(all))
		set.first = append(set.first, counts)
		all = append(all, t.stats...)
		for _, st := range t.stats {
			counts[slabOf(st.kind)]++
		}
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				panic(fmt.Sprintf("stats: template set: %v", r))
			}
		}()
		set.joined = NewTemplate(all...)
	}()
	return set
}

// Blocks is the stats of a TemplateSet made under one scope.
type Blocks struct {
	b   Block
	set *TemplateSet
}

// Part returns the block of the set's i-th template: the one
// Scope.NewBlock of that template would have returned.
func (bs Blocks) Part(i int) Block {
	set := bs.set
	b := Block{s: bs.b.s, t: set.parts[i]}
	if bs.b.ptrs != nil {
		b.ptrs = bs.b.ptrs[set.start[i] : set.start[i]+len(set.parts[i].stats)]
		return b
	}
	for sl := range b.base {
		b.base[sl] = bs.b.base[sl] + set.first[i][sl]
	}
	return b
}

// NewBlocks makes the stats of every template of set under the scope, or
// finds those that exist, as NewBlock of each template in turn would,
// and returns them.
func (sc Scope) NewBlocks(set *TemplateSet) Blocks {
	return Blocks{b: sc.NewBlock(set.joined), set: set}
}
