// Package deps pins the modules the packages are being built on until they import them; removed at integration.
package deps

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/kljensen/snowball"
	_ "github.com/labstack/echo/v4"
	_ "github.com/ollama/ollama/api"
	_ "github.com/philippgille/chromem-go"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/tiktoken-go/tokenizer"
	_ "go.uber.org/goleak"
	_ "gopkg.in/yaml.v3"
)
