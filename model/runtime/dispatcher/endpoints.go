package dispatcher

import (
	"strconv"
	"strings"
)

// EndpointURL is one endpoint: its name, the index of its entry in
// Config.Partners, and the URL its attempts go to.
type EndpointURL struct {
	Name  string
	Group int
	URL   string
}

// EndpointURLs lists the endpoints cfg's partners stand for, in order, with
// their URLs resolved against PartnersURL. Call it on a validated Config.
func (c *Config) EndpointURLs() []EndpointURL {
	base := ""
	if c.PartnersURL != "" {
		base, _ = LoopbackURL(c.PartnersURL)
		base = strings.TrimRight(base, "/")
	}
	var out []EndpointURL
	for g := range c.Partners {
		p := &c.Partners[g]
		u := p.URL
		if strings.HasPrefix(u, "/") {
			u = base + u
		}
		u, _ = LoopbackURL(u)
		if p.Members == 0 {
			out = append(out, EndpointURL{Name: p.Name, Group: g, URL: u})
			continue
		}
		for m := 0; m < p.Members; m++ {
			ms := strconv.Itoa(m)
			out = append(out, EndpointURL{Name: p.Name + "-" + ms, Group: g, URL: strings.NewReplacer("{member}", ms, "%7Bmember%7D", ms).Replace(u)})
		}
	}
	return out
}

// Endpoints lists the endpoint names cfg's partners stand for, in order.
func (c *Config) Endpoints() []string {
	var names []string
	for _, p := range c.Partners {
		if p.Members == 0 {
			names = append(names, p.Name)
			continue
		}
		for m := 0; m < p.Members; m++ {
			names = append(names, p.Name+"-"+strconv.Itoa(m))
		}
	}
	return names
}
