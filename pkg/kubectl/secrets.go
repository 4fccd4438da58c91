package kubectl

// secretsDump is the part of SecretsConfigDump the table shows.
type secretsDump struct {
	Static []struct {
		Name        string         `json:"name"`
		LastUpdated string         `json:"last_updated"`
		Secret      map[string]any `json:"secret"`
	} `json:"static_secrets"`
	DynamicActive  []dynamicSecret `json:"dynamic_active_secrets"`
	DynamicWarming []dynamicSecret `json:"dynamic_warming_secrets"`
}

// dynamicSecret is a secret from SDS.
type dynamicSecret struct {
	Name        string         `json:"name"`
	VersionInfo string         `json:"version_info"`
	LastUpdated string         `json:"last_updated"`
	Secret      map[string]any `json:"secret"`
}

// secretKinds are the kinds of Secret, by the field that holds it.
var secretKinds = []string{"tls_certificate", "session_ticket_keys", "validation_context", "generic_secret"}

// secretKind names the kind of a secret.
func secretKind(s map[string]any) string {
	for _, k := range secretKinds {
		if _, ok := s[k]; ok {
			return k
		}
	}
	return ""
}

// secretsTable prints the proxy's secrets (never their values, which the
// proxy redacts anyway).
func secretsTable(a *app, raw []byte) error {
	var d secretsDump
	if err := parseSection(raw, secretsDumpType, &d); err != nil {
		return err
	}
	tab := newTable(a.stdout, "NAME", "KIND", "SOURCE", "VERSION", "LAST UPDATED")
	for _, s := range d.Static {
		tab.row(s.Name, secretKind(s.Secret), "static", "", a.lastUpdated(s.LastUpdated))
	}
	for _, group := range []struct {
		source  string
		secrets []dynamicSecret
	}{{"dynamic", d.DynamicActive}, {"dynamic (warming)", d.DynamicWarming}} {
		for _, s := range group.secrets {
			tab.row(s.Name, secretKind(s.Secret), group.source, s.VersionInfo, a.lastUpdated(s.LastUpdated))
		}
	}
	return tab.flush()
}
