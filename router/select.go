package router

import "strconv"

// nearMisses is how many skills past the auto-loaded ones are considered
// (and given a reason when not loaded).
const nearMisses = 3

// selectSkills fills Selected, Pinned and Reasons. Mentioned skills come
// first, in mention order. Then the best-ranked skills are auto-loaded, up to
// topK of them, when their calibrated confidence reaches the threshold and,
// after the first, their score is within relative of the best one's and they
// are not a near-duplicate of a skill already selected. Skills
// that frontmatter turns off (enabled: false, auto_load: false) are never
// auto-loaded, only pinned. Only the top topK+nearMisses ranks are
// considered: a skill ranked tenth is not auto-loaded however confident.
func (ix *rankIndex) selectSkills(d *Decision, res *rankResult, pinned []string, topK int, threshold, relative float64) {
	d.Pinned = pinned
	reasons := map[string]string{}
	picked := map[string]bool{}
	var chosen []int // list positions of the selected skills
	for _, id := range d.Pinned {
		d.Selected = append(d.Selected, id)
		picked[id] = true
		if i, ok := ix.pos[id]; ok {
			chosen = append(chosen, i)
		}
	}
	auto := 0
	best := -1.0
	considered := 0
	for _, e := range res.top {
		if considered >= max(topK, 0)+nearMisses {
			break
		}
		i := int(e.i)
		s := ix.list[i]
		if picked[s.ID] {
			continue
		}
		considered++
		conf, score := e.conf, e.score
		switch {
		case conf <= 0 && score <= 0:
			// Nothing matched at all; no reason worth printing.
		case !(conf >= threshold): // also rejects NaN
			c, t := apart(conf, threshold)
			reasons[s.ID] = "confidence " + c + " below threshold " + t
		case s.Disabled():
			reasons[s.ID] = "disabled in frontmatter (enabled: false)"
		case s.AutoLoad != nil && !*s.AutoLoad:
			reasons[s.ID] = "auto_load: false in frontmatter"
		case topK <= 0:
			reasons[s.ID] = "auto-loading is off for this request"
		case auto >= topK:
			reasons[s.ID] = maxAutoLoadPrefix + strconv.Itoa(topK) + " reached"
		case auto > 0 && relative > 0 && score < relative*best:
			reasons[s.ID] = "score " + f3(score) + " not within " + strconv.FormatFloat(relative*100, 'f', 0, 64) + "% of the best match's " + f3(best)
		default:
			// Compared last: a signature overlap is the costliest test, and
			// most skills considered fail an earlier one.
			if dup := ix.duplicateOf(i, chosen); dup >= 0 {
				reasons[s.ID] = "near-duplicate of " + ix.list[dup].ID + " (term overlap " + strconv.FormatFloat(overlap(ix.sigs[i], ix.sigs[dup]), 'f', 2, 64) + ")"
				break
			}
			d.Selected = append(d.Selected, s.ID)
			picked[s.ID] = true
			chosen = append(chosen, i)
			if auto == 0 {
				best = score
			}
			auto++
		}
	}
	if len(reasons) > 0 {
		d.Reasons = reasons
	}
}

// f3 is x as %.3f formats it; reasons are written on every request, and
// strconv costs a fraction of fmt.
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// apart formats x and limit with three decimals, or with as many more as
// it takes to tell them apart: a confidence just below its threshold would
// otherwise read as equal to it ("0.150 below threshold 0.150").
func apart(x, limit float64) (string, string) {
	for prec := 3; prec <= 17; prec++ {
		a, b := strconv.FormatFloat(x, 'f', prec, 64), strconv.FormatFloat(limit, 'f', prec, 64)
		if a != b {
			return a, b
		}
	}
	return strconv.FormatFloat(x, 'g', -1, 64), strconv.FormatFloat(limit, 'g', -1, 64)
}

// maxAutoLoadPrefix starts the reason of a skill max_auto_load kept out
// ("max_auto_load 2 reached"); planPrompt finds such reasons by it and adds
// the picks that filled the count but were then left out for the auto-load
// budget.
const maxAutoLoadPrefix = "max_auto_load "

// duplicateOf returns the first of chosen that skill i nearly duplicates,
// or -1.
func (ix *rankIndex) duplicateOf(i int, chosen []int) int {
	if ix.sigs == nil {
		return -1
	}
	for _, j := range chosen {
		if overlap(ix.sigs[i], ix.sigs[j]) >= dupOverlap {
			return j
		}
	}
	return -1
}
