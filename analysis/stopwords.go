package analysis

// stopWords are function words that carry no topic: the Snowball English
// list plus modal verbs, contractions without their apostrophe (Words strips
// it) and conversational filler that chat messages are full of ("please",
// "hi", "thanks"). Topic-bearing words that happen to be frequent in skill
// descriptions ("use", "create") are left to IDF.
var stopWords = map[string]struct{}{}

func init() {
	for _, w := range []string{
		// Snowball English stop words.
		"a", "about", "above", "after", "again", "against", "all", "am", "an",
		"and", "any", "are", "as", "at", "be", "because", "been", "before",
		"being", "below", "between", "both", "but", "by", "can", "did", "do",
		"does", "doing", "don", "down", "during", "each", "few", "for", "from",
		"further", "had", "has", "have", "having", "he", "her", "here", "hers",
		"herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is",
		"it", "its", "itself", "just", "me", "more", "most", "my", "myself",
		"no", "nor", "not", "now", "of", "off", "on", "once", "only", "or",
		"other", "our", "ours", "ourselves", "out", "over", "own", "s", "same",
		"she", "should", "so", "some", "such", "t", "than", "that", "the", "their",
		"theirs", "them", "themselves", "then", "there", "these", "they",
		"this", "those", "through", "to", "too", "under", "until", "up",
		"very", "was", "we", "were", "what", "when", "where", "which", "while",
		"who", "whom", "why", "will", "with", "you", "your", "yours", "yourself",
		"yourselves",
		// Modals and auxiliaries.
		"could", "would", "may", "might", "must", "shall", "cannot", "ought",
		// Contractions as Words leaves them.
		"im", "ive", "id", "ill", "youre", "youve", "youd", "youll", "hes", "shes",
		"its", "were", "weve", "wed", "theyre", "theyve", "dont", "doesnt", "didnt",
		"isnt", "arent", "wasnt", "werent", "wont", "wouldnt", "cant", "couldnt",
		"shouldnt", "havent", "hasnt", "hadnt", "lets", "thats", "whats", "theres",
		"heres", "whos", "hows", "wheres",
		// Filler.
		"also", "etc", "eg", "ie", "via", "yet", "whether", "within", "without",
		"please", "hi", "hello", "hey", "thanks", "thank", "ok", "okay", "yes",
		"yeah", "sure", "well", "oh", "u", "ur",
	} {
		stopWords[w] = struct{}{}
	}
}

// IsStopWord reports whether a lowercase word is a stop word.
func IsStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}
