package main

import (
	"errors"
)

var errNotBuilt = errors.New("not in this build yet")
