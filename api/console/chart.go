package console

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/agentmemory/agentmemory/internal/quotas"
)

// Chart geometry, in SVG user units: the plot sits inside the margins.
const (
	chartW, chartH              = 520, 150
	chartLeft, chartRight       = 56, 12
	chartTop, chartBottom       = 12, 26
	chartPlotW, chartPlotH      = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	chartGridLines              = 4
	chartStroke, chartAreaColor = "#3555d8", "#e4e9ff"
)

// chartSVG draws pts (one per day, oldest first) of series quota as an SVG area chart: a
// y axis from 0 to a round maximum with grid lines, the first, middle and last day on the x
// axis, the line and the area under it. Only presentation attributes, no style or script
// (the Console's CSP). title labels it for screen readers.
func chartSVG(title, quota string, pts []quotas.Point) template.HTML {
	var top int64 = 1
	for _, p := range pts {
		top = max(top, p.Used)
	}
	top = roundUp(top)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s over the last %d days" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, template.HTMLEscapeString(title), len(pts))
	for i := 0; i <= chartGridLines; i++ {
		v := top * int64(i) / chartGridLines
		y := chartTop + chartPlotH - chartPlotH*i/chartGridLines
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#e4e7ec" stroke-width="1"/>`, chartLeft, y, chartW-chartRight, y)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-size="11" fill="#667085">%s</text>`, chartLeft-6, y+4, template.HTMLEscapeString(short(quota, v)))
	}
	if len(pts) > 0 {
		line, area := chartPaths(pts, top)
		fmt.Fprintf(&b, `<path d="%s" fill="%s" stroke="none"/>`, area, chartAreaColor)
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"/>`, line, chartStroke)
		for _, i := range []int{0, len(pts) / 2, len(pts) - 1} {
			anchor := map[int]string{0: "start", len(pts) - 1: "end"}[i]
			if anchor == "" {
				anchor = "middle"
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="%s" font-size="11" fill="#667085">%s</text>`, xOf(i, len(pts)), chartH-8, anchor, pts[i].Day[5:])
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built here from numbers and escaped labels only
}

// chartPaths returns the SVG path of the line through pts and of the area below it.
func chartPaths(pts []quotas.Point, top int64) (line, area string) {
	var l strings.Builder
	for i, p := range pts {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		y := float64(chartTop+chartPlotH) - float64(chartPlotH)*float64(p.Used)/float64(top)
		fmt.Fprintf(&l, "%s%.1f %.1f ", cmd, xOf(i, len(pts)), y)
	}
	base := chartTop + chartPlotH
	area = fmt.Sprintf("%sL%.1f %d L%.1f %d Z", l.String(), xOf(len(pts)-1, len(pts)), base, xOf(0, len(pts)), base)
	return strings.TrimSpace(l.String()), area
}

// xOf is the x of day i of n.
func xOf(i, n int) float64 {
	if n <= 1 {
		return chartLeft
	}
	return chartLeft + float64(chartPlotW)*float64(i)/float64(n-1)
}

// roundUp is the chart's top for a largest value n: chartGridLines times the smallest step
// of 1, 2 or 5 times a power of ten that reaches n, so every grid line falls on a round value.
func roundUp(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p*chartGridLines >= n {
				return m * p * chartGridLines
			}
		}
	}
}

// short is v as an axis label: bytes in their unit, counts with k and M.
func short(quota string, v int64) string {
	if quota == quotas.StateBytesPerSpace {
		return amount(quota, v)
	}
	switch {
	case v >= 1_000_000:
		return trimZero(float64(v)/1_000_000) + "M"
	case v >= 1000:
		return trimZero(float64(v)/1000) + "k"
	}
	return fmt.Sprintf("%d", v)
}

// trimZero formats f with one decimal, without a trailing ".0".
func trimZero(f float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0")
}
