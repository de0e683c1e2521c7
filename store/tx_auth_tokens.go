package store

import "github.com/fieldrelay/fieldrelay/engine/model"

func (t *tx) AuthToken(hash string) (*model.AuthToken, error) {
	var a model.AuthToken
	if ok, err := getJSON(t.btx.Bucket(bucketAuthTokens), []byte(hash), &a); !ok || err != nil {
		if err == nil {
			err = model.NotFound("token")
		}
		return nil, err
	}
	return &a, nil
}

func (t *tx) PutAuthToken(hash string, a *model.AuthToken) error {
	return putJSON(t.btx.Bucket(bucketAuthTokens), []byte(hash), a)
}

func (t *tx) DeleteAuthToken(hash string) error {
	return t.btx.Bucket(bucketAuthTokens).Delete([]byte(hash))
}
