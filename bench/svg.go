package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Hand-written SVG line charts: small, dependency-free and byte-for-byte
// deterministic for the same report (fixed palette, fixed number formats).

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

type series struct {
	name  string
	color string
	dash  bool
	x, y  []float64
}

type axis struct {
	label    string
	log      bool
	min, max float64
	ticks    []float64
	format   func(float64) string
}

// panel is one plot: the plot area's origin and size, axes and lines; its
// legend goes to the right of the plot area.
type panel struct {
	x, y, w, h float64
	title      string
	xa, ya     axis
	lines      []series
}

func (a axis) pos(v, from, length float64) float64 {
	if a.log {
		v = math.Log10(math.Max(v, a.min))
		return from + (v-math.Log10(a.min))/(math.Log10(a.max)-math.Log10(a.min))*length
	}
	return from + (v-a.min)/(a.max-a.min)*length
}

func (p panel) render(b *strings.Builder) {
	px := func(v float64) float64 { return p.xa.pos(v, p.x, p.w) }
	py := func(v float64) float64 { return p.y + p.h - (p.ya.pos(v, 0, p.h)) }
	fmt.Fprintf(b, `<text x="%s" y="%s" font-size="14" font-weight="bold">%s</text>`+"\n", f1(p.x), f1(p.y-14), esc(p.title))
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#333"/>`+"\n", f1(p.x), f1(p.y), f1(p.w), f1(p.h))
	for _, t := range p.ya.ticks {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f1(p.x), f1(y), f1(p.x+p.w), f1(y))
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" text-anchor="end">%s</text>`+"\n", f1(p.x-6), f1(y+4), esc(p.ya.format(t)))
	}
	for _, t := range p.xa.ticks {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f1(x), f1(p.y), f1(x), f1(p.y+p.h))
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11" text-anchor="middle">%s</text>`+"\n", f1(x), f1(p.y+p.h+16), esc(p.xa.format(t)))
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" font-size="12" text-anchor="middle">%s</text>`+"\n", f1(p.x+p.w/2), f1(p.y+p.h+36), esc(p.xa.label))
	fmt.Fprintf(b, `<text x="%s" y="%s" font-size="12" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`+"\n",
		f1(p.x-48), f1(p.y+p.h/2), f1(p.x-48), f1(p.y+p.h/2), esc(p.ya.label))
	for i, s := range p.lines {
		var pts []string
		for j := range s.x {
			if (p.xa.log && s.x[j] <= 0) || (p.ya.log && s.y[j] <= 0) {
				continue // no place on a log axis
			}
			pts = append(pts, f1(px(s.x[j]))+","+f1(py(s.y[j])))
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.color, dash, strings.Join(pts, " "))
		for _, pt := range pts {
			xy := strings.SplitN(pt, ",", 2)
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], s.color)
		}
		ly := p.y + 10 + float64(i)*18
		lx := p.x + p.w + 14
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", f1(lx), f1(ly), f1(lx+22), f1(ly), s.color, dash)
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="11">%s</text>`+"\n", f1(lx+28), f1(ly+4), esc(s.name))
	}
}

func svgDoc(w io.Writer, width, height int, panels ...panel) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	for _, p := range panels {
		p.render(&b)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHitChart draws Hit@k against k, one line per strategy.
func WriteHitChart(w io.Writer, r *Report) error {
	if len(r.Results) == 0 || len(r.Ks) == 0 {
		return fmt.Errorf("bench: no results to chart")
	}
	maxK := 0
	for _, k := range r.Ks {
		maxK = max(maxK, k)
	}
	xa := axis{label: "k", min: 0, max: float64(maxK), format: fk}
	for _, k := range r.Ks {
		xa.ticks = append(xa.ticks, float64(k))
	}
	ya := axis{label: "Hit@k", min: 0, max: 1, ticks: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, format: func(v float64) string { return fnum(v, 1) }}
	p := panel{x: 70, y: 50, w: 420, h: 300, title: "Hit@k by strategy — " + r.Dataset, xa: xa, ya: ya}
	for i, res := range r.Results {
		s := series{name: res.Label() + " (" + res.Embedder + ")", color: palette[i%len(palette)]}
		for _, k := range r.Ks {
			s.x = append(s.x, float64(k))
			s.y = append(s.y, res.HitAt.Values[k])
		}
		p.lines = append(p.lines, s)
	}
	return svgDoc(w, 720, 410, p)
}

// WriteScaleChart draws prompt tokens and routing latency against library
// size, both on log axes.
func WriteScaleChart(w io.Writer, r *Report) error {
	if len(r.Scale) == 0 {
		return fmt.Errorf("bench: no scale results to chart")
	}
	var sizes []float64
	for _, p := range r.Scale {
		sizes = append(sizes, float64(p.Size))
	}
	strategies := scaleStrategies(r)

	tok := panel{x: 80, y: 50, w: 380, h: 300, title: "Prompt tokens per request (" + r.Encodings[0] + ")"}
	tok.lines = append(tok.lines,
		series{name: "stuff-all", color: "#555", dash: true, x: sizes, y: scaleValues(r, func(p ScalePoint, _ Result) float64 { return float64(p.StuffAllTokens) }, "")},
		series{name: "catalog-only", color: "#000", dash: true, x: sizes, y: scaleValues(r, func(p ScalePoint, _ Result) float64 { return float64(p.CatalogTokens) }, "")})
	lat := panel{x: 700, y: 50, w: 380, h: 300, title: "Routing latency per request"}
	for i, s := range strategies {
		c := palette[i%len(palette)]
		tok.lines = append(tok.lines, series{name: "router, " + s, color: c, x: sizes,
			y: scaleValues(r, func(_ ScalePoint, res Result) float64 { return res.PromptTokens.Router.Mean }, s)})
		lat.lines = append(lat.lines,
			series{name: s + " p50", color: c, x: sizes, y: scaleValues(r, func(_ ScalePoint, res Result) float64 { return res.LatencyMS.P50 }, s)},
			series{name: s + " p99", color: c, dash: true, x: sizes, y: scaleValues(r, func(_ ScalePoint, res Result) float64 { return res.LatencyMS.P99 }, s)})
	}
	xa := logAxis("skills in the library", sizes, fcount)
	tok.xa, lat.xa = xa, xa
	tok.ya = logAxis("tokens", allY(tok.lines), fcount)
	lat.ya = logAxis("milliseconds", allY(lat.lines), fms)
	return svgDoc(w, 1260, 410, tok, lat)
}

func scaleStrategies(r *Report) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range r.Scale {
		for _, res := range p.Results {
			if !seen[res.Label()] {
				seen[res.Label()] = true
				out = append(out, res.Label())
			}
		}
	}
	return out
}

// scaleValues returns one value per size; with strategy "" the value is
// library-wide and read once per point.
func scaleValues(r *Report, get func(ScalePoint, Result) float64, strategy string) []float64 {
	out := make([]float64, len(r.Scale))
	for i, p := range r.Scale {
		if strategy == "" {
			out[i] = get(p, Result{})
			continue
		}
		for _, res := range p.Results {
			if res.Label() == strategy {
				out[i] = get(p, res)
			}
		}
	}
	return out
}

func allY(ss []series) []float64 {
	var out []float64
	for _, s := range ss {
		out = append(out, s.y...)
	}
	return out
}

// logAxis spans whole decades around the positive values.
func logAxis(label string, vs []float64, format func(float64) string) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	a := axis{label: label, log: true, format: format}
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if e1 <= e0 {
		e1 = e0 + 1
	}
	a.min, a.max = math.Pow(10, e0), math.Pow(10, e1)
	for e := e0; e <= e1; e++ {
		a.ticks = append(a.ticks, math.Pow(10, e))
	}
	return a
}

func fk(v float64) string { return strconv.Itoa(int(v)) }

// fcount writes 1, 10, 100, 1k, 10k, 1M.
func fcount(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func fms(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func esc(s string) string { return xmlEscaper.Replace(s) }
