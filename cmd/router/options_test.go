package main

import "testing"

// The proxy answers calls of every tool it may have offered on an earlier
// turn when state stored upstream still holds them unanswered: the
// router's and the sandbox's, whatever this turn offers.
func TestProxyConfigKnowsEveryProxyTool(t *testing.T) {
	cfg, err := loadFor(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pc := cfg.proxyConfig()
	for _, name := range []string{"load_skill", "search_skills", "read_skill_resource", "skill_execute"} {
		if pc.ProxyTool == nil || !pc.ProxyTool(name) {
			t.Errorf("%s is not known as the proxy's", name)
		}
	}
	if pc.ProxyTool("get_weather") {
		t.Error("a client tool is taken for the proxy's")
	}
}
