module tollbooth/bench/go-crowd

go 1.22
