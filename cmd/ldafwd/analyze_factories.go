package main

import (
	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/classifier"
)

// analyzeFactories builds the non-LDA synopses --synopsis asks for.
func analyzeFactories(kinds map[string]bool, cl *classifier.Classifier) ([]analyze.SynopsisFactory, error) {
	var out []analyze.SynopsisFactory
	return out, nil
}
