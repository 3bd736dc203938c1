package spaces

import (
	"fmt"
	"net/url"
	"regexp"
)

// ExportSettings configure the space's continuous export (issue 33, EXP-1): the sinks its
// feed is delivered to, each by a workflow of its own (workflows.SinkWorkflow). The features
// document is changed like any other (a direct PUT where allowed, else a reviewed change
// request), so adding a sink is reviewed.
type ExportSettings struct {
	Sinks []ExportSink `json:"sinks,omitempty"`
}

// ExportSink is one sink: Name (lower-case letters, digits, '-' and '_', 1-64, unique in the
// space), Kind "directory" (files under the server's export directory, in
// <space id>/<name>/), "bucket" (files in the object store at URL: s3://, gs:// or azblob://,
// with the server's cloud credentials; never credentials in the URL) or "kafka" (a topic per
// table, TopicPrefix + "." + table, default prefix agentmemory.export, on the server's
// KAFKA_BROKERS).
type ExportSink struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	URL         string `json:"url,omitempty"`
	TopicPrefix string `json:"topic_prefix,omitempty"`
}

// MaxExportSinks bounds a space's sinks.
const MaxExportSinks = 8

// DefaultTopicPrefix is a Kafka sink's topic prefix when it names none.
const DefaultTopicPrefix = "agentmemory.export"

var (
	sinkNamePattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	topicPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)
)

// Topics is the sink's topic prefix, DefaultTopicPrefix when it names none.
func (s ExportSink) Topics() string {
	if s.TopicPrefix == "" {
		return DefaultTopicPrefix
	}
	return s.TopicPrefix
}

// validateExport checks each sink (fault.Invalid naming the member, e.g. export.sinks[1].url).
func validateExport(e ExportSettings) error {
	if len(e.Sinks) > MaxExportSinks {
		return invalidMember("export.sinks", fmt.Sprintf("at most %d sinks", MaxExportSinks))
	}
	seen := map[string]bool{}
	for i, s := range e.Sinks {
		at := fmt.Sprintf("export.sinks[%d]", i)
		if !sinkNamePattern.MatchString(s.Name) || seen[s.Name] {
			return invalidMember(at+".name", "must be a unique name of lower-case letters, digits, '-' and '_' (1-64)")
		}
		seen[s.Name] = true
		if err := validateSinkKind(at, s); err != nil {
			return err
		}
	}
	return nil
}

func validateSinkKind(at string, s ExportSink) error {
	switch s.Kind {
	case "directory":
		if s.URL != "" || s.TopicPrefix != "" {
			return invalidMember(at, "a directory sink takes a name only: its files go under the server's export directory")
		}
	case "bucket":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "s3" && u.Scheme != "gs" && u.Scheme != "azblob") || u.Host == "" || u.User != nil {
			return invalidMember(at+".url", "must be an s3://, gs:// or azblob:// bucket URL without credentials")
		}
		if s.TopicPrefix != "" {
			return invalidMember(at+".topic_prefix", "only a kafka sink has topics")
		}
	case "kafka":
		if s.URL != "" {
			return invalidMember(at+".url", "a kafka sink uses the server's KAFKA_BROKERS")
		}
		if s.TopicPrefix != "" && !topicPrefixPattern.MatchString(s.TopicPrefix) {
			return invalidMember(at+".topic_prefix", "must be 1-200 letters, digits, '.', '_' or '-'")
		}
	default:
		return invalidMember(at+".kind", `must be "directory", "bucket" or "kafka"`)
	}
	return nil
}
