package main

import (
	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/spf13/pflag"
)

// extraSynopsisFlags size the synopses beside the LDA (RDA, LDS).
type extraSynopsisFlags struct{}

func (e *extraSynopsisFlags) register(fs *pflag.FlagSet) {}

func (e *extraSynopsisFlags) factories(kinds map[string]bool, cl *classifier.Classifier) ([]analyze.SynopsisFactory, error) {
	return analyzeFactories(kinds, cl)
}
