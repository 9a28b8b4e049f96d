// Writes samples of Go's log formats with the real libraries Debian packages: the standard
// log package, slog (golang.org/x/exp/slog, the package log/slog was released from; same
// output), logrus, zap, zerolog and klog.
//
// (k8s.io/klog is Debian's klog v2, in GOPATH without the /v2.)
// usage: GO111MODULE=off GOPATH=/usr/share/gocode go run go_logs.go OUTDIR
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/exp/slog"
	klog "k8s.io/klog"
)

var outdir string

func open(name string) *os.File {
	dir := filepath.Join(outdir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	f, err := os.Create(filepath.Join(dir, "input"))
	if err != nil {
		panic(err)
	}
	return f
}

func stdlog() {
	f := open("go_log")
	defer f.Close()
	l := log.New(f, "", log.LstdFlags)
	l.Printf("starting worker pool with %d workers", 4)
	l.Println("ERROR: cannot reach upstream:", errors.New("dial tcp 10.0.0.5:443: i/o timeout"))
	l.Printf("[WARN] retrying in %s", "2s")
	l.SetFlags(log.LstdFlags | log.Lmicroseconds | log.Lshortfile)
	l.Printf("request handled in %dms", 12)
	l.SetFlags(log.LstdFlags | log.LUTC | log.Lmsgprefix)
	l.SetPrefix("api: ")
	l.Print("shutting down")
}

func slogs() {
	f := open("go_slog_text")
	t := slog.New(slog.NewTextHandler(f))
	t.Info("server started", "port", 8080)
	t.Warn("cache miss rate high", "rate", 0.42)
	t.Error("query failed", errors.New("deadlock detected"), "table", "orders")
	t.Log(slog.ErrorLevel+2, "replica lag", "seconds", 31)
	f.Close()

	f = open("go_slog_json")
	j := slog.New(slog.NewJSONHandler(f))
	j.Info("server started", "port", 8080)
	j.Warn("disk almost full", "free_mb", 120)
	j.Error("write failed", errors.New("no space left on device"))
	f.Close()

	f = open("go_slog_default")
	log.SetOutput(f)
	slog.Info("server started", "port", 8080)
	slog.Error("query failed", errors.New("timeout"))
	f.Close()
	log.SetOutput(os.Stderr)
}

func logrusLogs() {
	f := open("logrus_text")
	l := logrus.New()
	l.SetOutput(f)
	l.SetFormatter(&logrus.TextFormatter{DisableColors: true, FullTimestamp: true})
	l.SetLevel(logrus.DebugLevel)
	l.WithField("user", "alice").Info("login succeeded")
	l.Debug("cache warmed")
	l.WithFields(logrus.Fields{"attempt": 3}).Warn("retrying payment")
	l.WithError(errors.New("card declined")).Error("payment failed")
	f.Close()

	f = open("logrus_json")
	l.SetOutput(f)
	l.SetFormatter(&logrus.JSONFormatter{})
	l.WithField("user", "alice").Info("login succeeded")
	l.WithError(errors.New("card declined")).Error("payment failed")
	l.Warn("session expiring")
	f.Close()
}

func zapLogs() {
	f := open("zap_json")
	enc := zap.NewProductionEncoderConfig()
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(f), zap.DebugLevel)
	z := zap.New(core, zap.AddCaller())
	z.Info("listening", zap.Int("port", 9000))
	z.Warn("slow request", zap.Duration("took", 1500000000))
	z.Error("upstream failed", zap.Error(errors.New("502 bad gateway")))
	z.DPanic("inconsistent state")
	z.Sync()
	f.Close()

	f = open("zap_console")
	dev := zap.NewDevelopmentEncoderConfig()
	core = zapcore.NewCore(zapcore.NewConsoleEncoder(dev), zapcore.AddSync(f), zap.DebugLevel)
	z = zap.New(core, zap.AddCaller())
	z.Debug("config loaded")
	z.Info("listening", zap.Int("port", 9000))
	z.Error("upstream failed", zap.Error(errors.New("502 bad gateway")))
	z.Sync()
	f.Close()
}

func zerologLogs() {
	f := open("zerolog_json")
	l := zerolog.New(f).With().Timestamp().Logger()
	l.Info().Str("service", "billing").Msg("started")
	l.Warn().Int("queue", 940).Msg("queue almost full")
	l.Error().Err(errors.New("timeout")).Msg("charge failed")
	l.Debug().Msg("tick")
	f.Close()
}

func klogs() {
	f := open("klog")
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Writer(f))
	klog.Info("Starting kubelet")
	klog.Warningf("Unable to read config path %q", "/etc/kubernetes/manifests")
	klog.Errorf("Failed to get node info: %v", errors.New("node \"worker-1\" not found"))
	klog.InfoS("Pod status updated", "pod", "default/web-0", "status", "Running")
	klog.Flush()
	f.Close()
}

func main() {
	outdir = os.Args[1]
	stdlog()
	slogs()
	logrusLogs()
	zapLogs()
	zerologLogs()
	klogs()
	fmt.Println("written to", outdir)
}
