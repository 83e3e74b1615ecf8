// Package experiments answers capacity questions: the analytic plan (retry
// schedule, amplification, Erlang C), the capacity search by simulation, and
// sweeps that put policies side by side across seeds.
package experiments
