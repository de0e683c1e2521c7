package store

import (
	"github.com/fieldrelay/fieldrelay/engine"
)

func (t *tx) AuthToken(hash string) (*engine.AuthToken, error) {
	var a engine.AuthToken
	if ok, err := getJSON(t.btx.Bucket(bucketAuthTokens), []byte(hash), &a); !ok || err != nil {
		if err == nil {
			err = engine.NotFound("token")
		}
		return nil, err
	}
	return &a, nil
}

func (t *tx) PutAuthToken(hash string, a *engine.AuthToken) error {
	return putJSON(t.btx.Bucket(bucketAuthTokens), []byte(hash), a)
}

func (t *tx) DeleteAuthToken(hash string) error {
	return t.btx.Bucket(bucketAuthTokens).Delete([]byte(hash))
}
