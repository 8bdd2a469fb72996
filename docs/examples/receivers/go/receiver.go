// A Herald webhook receiver on Go's standard library alone.
//
//	HERALD_WEBHOOK_SECRET=whsec_... PORT=8000 go run receiver.go
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const toleranceSeconds = 300

// verify returns nil when Herald signed rawBody with one of secrets.
func verify(rawBody []byte, timestamp, signatureHeader string, secrets []string, now time.Time) error {
	ts, err := strconv.ParseUint(timestamp, 10, 63) // digits only: no sign, no spaces
	if err != nil {
		return errors.New("X-Service-Timestamp is missing or not Unix seconds")
	}
	if age := now.Unix() - int64(ts); age > toleranceSeconds || age < -toleranceSeconds {
		return errors.New("X-Service-Timestamp is more than 300 s from now: a replay, or a clock is wrong")
	}
	entries := strings.FieldsFunc(signatureHeader, func(r rune) bool { return r == ' ' || r == ',' })
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(timestamp + "."))
		mac.Write(rawBody)
		expected := []byte("v1=" + hex.EncodeToString(mac.Sum(nil)))
		for _, entry := range entries {
			if hmac.Equal(expected, []byte(entry)) {
				return nil
			}
		}
	}
	return errors.New("no v1 signature matches: a wrong secret, or the body is not the raw body")
}

func main() {
	secrets := []string{os.Getenv("HERALD_WEBHOOK_SECRET")}
	if secrets[0] == "" {
		log.Fatal("set HERALD_WEBHOOK_SECRET to the endpoint's signing secret")
	}
	if previous := os.Getenv("HERALD_WEBHOOK_SECRET_PREVIOUS"); previous != "" {
		secrets = append(secrets, previous)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rawBody, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 2<<20)) // the raw bytes, before any decoding
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		err = verify(rawBody, r.Header.Get("X-Service-Timestamp"), r.Header.Get("X-Service-Signature"), secrets, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var event struct {
			ID   string          `json:"id"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(rawBody, &event); err != nil {
			http.Error(w, "the body is not an event", http.StatusBadRequest)
			return
		}
		// Skip event ids you have processed already; ignore types you do not know.
		log.Println("received", event.Type, event.ID)
		w.WriteHeader(http.StatusNoContent)
	})
	port := os.Getenv("PORT")
	if port == "" {
		port = "8000"
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}
