package main

import "github.com/ldafwd/ldafwd/control"

func controlGenerateKey() ([]byte, error) { return control.GenerateKey() }
