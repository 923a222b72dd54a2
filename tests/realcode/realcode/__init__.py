"""The real-code suite's checker: binary facts (nm, objdump), the programs'
records turned into real frames, the windows a correct xref shows, and the
runs that compare them with xref's (docs/trace.md, "What trace sees in
optimized code")."""
