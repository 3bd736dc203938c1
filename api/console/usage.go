package console

import (
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/quotas"
)

// usageDays is how many days the Usage screen charts (issue 34 §1).
const usageDays = 30

// usageLine is one row of the Usage screen: a quota's line with its use shown in its unit.
type usageLine struct {
	quotas.Line
	UsedText, LimitText string
	Near                bool // 80% of the limit or more
}

// usageChart is one series of the 30-day chart, drawn server-side as inline SVG (the CSP
// allows no script).
type usageChart struct {
	Quota string
	Now   string
	SVG   template.HTML
}

type usageData struct {
	Lines  []usageLine
	Charts []usageChart
}

// usagePage: each quota of the space with its use and limit, and per space-wide series a
// chart of the last 30 days from the retention sweep's daily samples (today: the live count).
// Counts and names only, never content.
func (h *Console) usagePage(c *gin.Context) {
	p, ok := h.allow(c, "Usage")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	f, err := h.Docs.Features(ctx, p.SpaceID)
	if err != nil {
		h.fail(c, err)
		return
	}
	lines, err := quotas.Usage(ctx, h.DB, p.SpaceID, f)
	if err != nil {
		h.fail(c, err)
		return
	}
	hist, err := quotas.History(ctx, h.DB, p.SpaceID, usageDays, h.Now())
	if err != nil {
		h.fail(c, err)
		return
	}
	var d usageData
	for _, l := range lines {
		d.Lines = append(d.Lines, usageLine{Line: l, UsedText: amount(l.Quota, l.Used), LimitText: amount(l.Quota, l.Limit), Near: l.Percent() >= 80})
	}
	for _, q := range quotas.Sampled {
		pts := hist[q]
		last := int64(0)
		if len(pts) > 0 {
			last = pts[len(pts)-1].Used
		}
		d.Charts = append(d.Charts, usageChart{Quota: seriesName(q), Now: amount(q, last), SVG: chartSVG(seriesName(q), q, pts)})
	}
	h.renderView(c, http.StatusOK, "usage", view{Title: "Usage", Data: d})
}

// seriesName is a chart's title: the per-base quotas are charted over all bases together.
func seriesName(q string) string {
	switch q {
	case quotas.DocumentsPerBase:
		return "documents (all bases)"
	case quotas.ChunksPerBase:
		return "chunks (all bases)"
	}
	return strings.ReplaceAll(strings.TrimSuffix(q, "_per_space"), "_", " ")
}

// amount is n in quota's unit: bytes in KiB/MiB/GiB for state_bytes_per_space, else a count.
func amount(quota string, n int64) string {
	if quota != quotas.StateBytesPerSpace {
		return grouped(n)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// grouped is n with its thousands separated by commas (1,000,000).
func grouped(n int64) string {
	s := fmt.Sprintf("%d", n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
